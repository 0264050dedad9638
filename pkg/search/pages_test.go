package search

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolsearch/toolsearch/pkg/embedding"
)

// countFrees has freeOSMemory count its calls for the test's length.
func countFrees(t *testing.T) *atomic.Int32 {
	t.Helper()
	var n atomic.Int32
	was := freeOSMemory
	freeOSMemory = func() { n.Add(1) }
	t.Cleanup(func() { freeOSMemory = was })
	return &n
}

// A rebuild's embedding returns its free pages every 32nd of its rows
// once they are many; a first build, and a rebuild of few rows, do not.
func TestPageReturner(t *testing.T) {
	tests := []struct {
		name        string
		rebuild     bool
		rows, width int
		want        int32
	}{
		{"first build", false, 100_000, 1536, 0},
		{"rebuild of few rows", true, 100, 1536, 0},
		{"rebuild, 10,000 rows", true, 10_000, 1536, 32},
		{"rebuild, rows not a multiple of 32", true, 10_007, 1536, 32},
		{"rebuild, width unknown", true, 10_000, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			frees := countFrees(t)
			p := newPageReturner(tt.rebuild, tt.rows, tt.width)
			for range tt.rows {
				p.wrote()
				// One return at a time, each waited for here, so that
				// the count does not depend on the scheduler.
				for p != nil && p.busy.Load() {
					time.Sleep(time.Millisecond)
				}
			}
			if got := frees.Load(); got != tt.want {
				t.Errorf("%d returns, want %d", got, tt.want)
			}
		})
	}
}

// The embedding of a rebuild through a provider counts its rows to the
// returner: with the threshold at nothing, a rebuild that embeds one tool
// returns the free pages once, and the first build none.
func TestRebuildReturnsPages(t *testing.T) {
	defer func(was int) { returnPagesFrom = was }(returnPagesFrom)
	returnPagesFrom = 0
	frees := countFrees(t)
	var width atomic.Int64
	width.Store(16)
	svc := New(Config{Embedder: embedding.NewOpenAI(embedding.OpenAIConfig{BaseURL: fakeProvider(t, &width), APIKey: "k", MaxRetries: -1}), QueryCacheSize: -1})
	if _, err := svc.Build(t.Context(), defaultSetup(t)); err != nil {
		t.Fatal(err)
	}
	if got := frees.Load(); got != 0 {
		t.Fatalf("the first build returned pages %d times, want none", got)
	}
	if _, err := svc.Build(t.Context(), withExtraTool(t, defaultSetup(t))); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); frees.Load() == 0 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if got := frees.Load(); got != 1 {
		t.Errorf("a rebuild embedding one tool returned pages %d times, want once", got)
	}
}
