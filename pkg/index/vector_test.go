package index

import (
	"math"
	"slices"
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

// Norm's four partial sums are a speed-up of the plain loop below, its
// reference: equal up to the rounding a float32 result can show.
func TestNormMatchesPlainLoop(t *testing.T) {
	plain := func(v []float32) float64 {
		var s float64
		for _, x := range v {
			s += float64(x) * float64(x)
		}
		return math.Sqrt(s)
	}
	for _, v := range [][]float32{nil, {3}, {3, 4}, {1, 2, 3, 4, 5, 6, 7}, {1e-20, 1e20, -5, 0.25, 9, 9, 9, 9, 9}} {
		got, want := Norm(v), plain(v)
		if float32(got) != float32(want) {
			t.Errorf("Norm(%v) = %v, plain loop %v", v, got, want)
		}
	}
}

// TestNormalize: a vector comes out of unit length and finite, one of
// values near float32's smallest too, whose inverse length overflows
// float32 (scaled in float32, each value became ±Inf, or NaN where it was
// 0); a vector of ordinary length is scaled as it always was, bit for bit.
func TestNormalize(t *testing.T) {
	tiny := make([]float32, 1536)
	for i := range tiny {
		if i%2 == 0 {
			tiny[i] = 1e-45
		}
	}
	tests := []struct {
		name string
		v    []float32
	}{
		{"ordinary", []float32{3, 4, 0, -12}},
		{"large but finite", []float32{math.MaxFloat32, -math.MaxFloat32, 1}},
		{"subnormal values, one in two zero", tiny},
		{"two subnormal values", []float32{1e-40, 2e-40}},
		{"the smallest", []float32{math.SmallestNonzeroFloat32}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := append([]float32(nil), tt.v...)
			if Normalize(v) == 0 {
				t.Fatal("Normalize reported a zero length")
			}
			if !finite(v) || math.Abs(Norm(v)-1) > 1e-6 {
				t.Errorf("normalised: finite %v, length %v; want finite, 1", finite(v), Norm(v))
			}
			if inv := 1 / Norm(tt.v); inv <= math.MaxFloat32 {
				for i, x := range tt.v {
					if want := x * float32(inv); v[i] != want {
						t.Errorf("value %d = %v, want %v as float32 scaling gives", i, v[i], want)
					}
				}
			}
		})
	}
}

func TestAddSparse(t *testing.T) {
	tests := []struct {
		name string
		a, b Sparse
		w    float32
		want Sparse
	}{
		{"both empty", Sparse{}, Sparse{}, 0.5, Sparse{}},
		{"a alone", Sparse{Idx: []int32{1, 4}, Val: []float32{1, 2}}, Sparse{}, 0.5, Sparse{Idx: []int32{1, 4}, Val: []float32{1, 2}}},
		{"b alone, weighted", Sparse{}, Sparse{Idx: []int32{0, 9}, Val: []float32{2, 4}}, 0.5, Sparse{Idx: []int32{0, 9}, Val: []float32{1, 2}}},
		{"interleaved and shared", Sparse{Idx: []int32{1, 3, 7}, Val: []float32{1, 1, 1}}, Sparse{Idx: []int32{0, 3, 8}, Val: []float32{2, 2, 2}}, 0.5,
			Sparse{Idx: []int32{0, 1, 3, 7, 8}, Val: []float32{1, 1, 2, 1, 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := AddSparse(Sparse{}, tt.a, tt.b, tt.w)
			if !slices.Equal(got.Idx, tt.want.Idx) || !slices.Equal(got.Val, tt.want.Val) {
				t.Errorf("AddSparse = %v, want %v", got, tt.want)
			}
		})
	}
}
