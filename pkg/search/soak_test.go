package search

import (
	"context"
	"flag"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolsearch/toolsearch/pkg/access"

	"github.com/toolsearch/toolsearch/pkg/embedding"
)

var soakFor = flag.Duration("soak", 6*time.Second, "how long TestSoak runs (make soak: 30s)")

// TestSoak runs 64 concurrent searchers of every kind while the index is
// rebuilt every 100ms: no errors, every answer from a published snapshot,
// and memory that does not grow with the number of rebuilds.
func TestSoak(t *testing.T) {
	svc := New(Config{Embedder: embedding.NewLocal(256), Load: func(context.Context) (*Setup, error) { return defaultSetup(t), nil }})
	if _, err := svc.Rebuild(t.Context()); err != nil {
		t.Fatal(err)
	}
	var published sync.Map
	published.Store(svc.Current().Version, true)
	// The searchers run until the rebuilds end (below).
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()

	var answered, failures atomic.Int64
	reqs := []Request{
		{Query: "merge the approved pull request"}, {Query: "list open issues", Mode: "keyword"},
		{Query: "send a direct message", Mode: "semantic"}, {Template: "release"},
		{Query: "select:create_issue,post_message"}, {Operation: "list", ServerMatch: "git", TopK: ptr(5)},
		{Query: "+jira comment", Explain: true, Format: "openai"},
	}
	var wg sync.WaitGroup
	for w := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; ctx.Err() == nil; i++ {
				res, err := svc.Search(ctx, reqs[i%len(reqs)], access.Caller{})
				if err != nil {
					if ctx.Err() == nil {
						failures.Add(1)
						t.Errorf("search: %v", err)
					}
					return
				}
				if _, ok := published.Load(res.IndexVersion); !ok {
					// Published versions are recorded right after the swap;
					// give the recorder a moment before calling it a mixed index.
					time.Sleep(50 * time.Millisecond)
					if _, ok := published.Load(res.IndexVersion); !ok {
						failures.Add(1)
						t.Errorf("answer from unpublished index %q", res.IndexVersion)
						return
					}
				}
				answered.Add(1)
			}
		}()
	}
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	var first, last uint64
	rebuilds := 0
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	// The soak lasts -soak and minRebuilds rebuilds, whichever is
	// longer: under -race on two busy cores one rebuild beside 64
	// searchers has taken 5 s, and a count of rebuilds within a fixed
	// time would be a timed assertion.
	const minRebuilds = 3
	start := time.Now()
	for time.Since(start) < *soakFor || rebuilds < minRebuilds {
		<-tick.C
		snap, err := svc.Rebuild(context.Background())
		if err != nil {
			t.Errorf("rebuild: %v", err)
			break
		}
		published.Store(snap.Version, true)
		rebuilds++
		if rebuilds == 1 {
			first = heap()
		}
	}
	cancel()
	wg.Wait()
	last = heap()
	t.Logf("soak %s: %d searches, %d rebuilds, %d failures; heap after the first rebuild %.1f MB, at the end %.1f MB",
		*soakFor, answered.Load(), rebuilds, failures.Load(), float64(first)/1e6, float64(last)/1e6)
	if answered.Load() == 0 {
		t.Fatalf("no search was answered in %d rebuilds", rebuilds)
	}
	// Old snapshots must be collectable: the heap may not grow with the
	// number of rebuilds (a few MB of slack for garbage in flight).
	if last > first*2+8<<20 {
		t.Errorf("heap grew from %d to %d bytes over %d rebuilds", first, last, rebuilds)
	}
}
