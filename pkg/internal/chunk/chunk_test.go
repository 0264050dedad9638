package chunk

import (
	"sync/atomic"
	"testing"
)

func TestEach(t *testing.T) {
	for _, n := range []int{0, 1, Min - 1, Min, 2*Min + 3, 10_000} {
		seen := make([]atomic.Int32, n)
		parts := make([]atomic.Int32, Count(n))
		Each(n, func(c, lo, hi int) {
			parts[c].Add(1)
			for i := lo; i < hi; i++ {
				seen[i].Add(1)
			}
		})
		for i := range seen {
			if got := seen[i].Load(); got != 1 {
				t.Fatalf("n=%d: item %d done %d times, want once", n, i, got)
			}
		}
		for c := range parts {
			if got := parts[c].Load(); got != 1 {
				t.Errorf("n=%d: part %d called %d times, want once", n, c, got)
			}
		}
	}
}
