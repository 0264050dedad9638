package prefault

import "testing"

func TestMake(t *testing.T) {
	for _, n := range []int{0, 1, minBytes/4 - 1, minBytes / 4, 3 << 20} {
		s := Make[float32](n)
		if len(s) != n || cap(s) != n {
			t.Fatalf("Make(%d): len %d cap %d", n, len(s), cap(s))
		}
		for i, v := range s {
			if v != 0 {
				t.Fatalf("Make(%d)[%d] = %v, want 0", n, i, v)
			}
		}
	}
}
