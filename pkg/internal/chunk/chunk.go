// Package chunk spreads independent per-item work over the cores: the
// per-tool analysis of a build, the local embedder's fitting and
// embedding. Each part is a consecutive range of items, so a caller that
// writes item i's result to slot i needs no locking, and results are the
// same however the work was split.
package chunk

import (
	"runtime"
	"sync"
)

// Min is the fewest items worth a goroutine of their own.
const Min = 256

// Count is how many parts Each splits n items into: one a core, none
// smaller than Min (so at least one).
func Count(n int) int {
	return max(1, min(runtime.GOMAXPROCS(0), n/Min))
}

// Each calls f for the Count(n) consecutive parts of n items, part c
// holding items [lo, hi), in parallel, and returns when every call has.
func Each(n int, f func(c, lo, hi int)) {
	k := Count(n)
	if k == 1 {
		f(0, 0, n)
		return
	}
	var wg sync.WaitGroup
	for c := range k {
		lo, hi := c*n/k, (c+1)*n/k
		wg.Go(func() { f(c, lo, hi) })
	}
	wg.Wait()
}
