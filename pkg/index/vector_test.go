package index

import (
	"math"
	"testing"
)

func TestValidate(t *testing.T) {
	nan := float32(math.NaN())
	inf := float32(math.Inf(1))
	tests := []struct {
		name string
		vecs [][]float32
		n    int
		dim  int
		ok   bool
	}{
		{"good", [][]float32{{1, 2}, {3, 4}}, 2, 2, true},
		{"any dim", [][]float32{{1, 2, 3}}, 1, 0, true},
		{"short", [][]float32{{1, 2}}, 2, 2, false},
		{"empty vector", [][]float32{{}}, 1, 0, false},
		{"nan", [][]float32{{1, nan}}, 1, 2, false},
		{"inf", [][]float32{{inf, 1}}, 1, 2, false},
		{"-inf in the unrolled part", [][]float32{{1, 2, 3, 4, 5, 6, -inf, 8, 9}}, 1, 9, false},
		{"nan in the tail", [][]float32{{1, 2, 3, 4, 5, 6, 7, 8, nan}}, 1, 9, false},
		{"large but finite", [][]float32{{math.MaxFloat32, -math.MaxFloat32, 1, 2, 3}}, 1, 5, true},
	}
	for _, tt := range tests {
		_, err := Validate(tt.vecs, tt.n, tt.dim)
		if (err == nil) != tt.ok {
			t.Errorf("%s: Validate() error = %v, want ok=%v", tt.name, err, tt.ok)
		}
	}
}
