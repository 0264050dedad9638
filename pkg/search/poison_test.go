package search

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/toolsearch/toolsearch/pkg/catalog"
	"github.com/toolsearch/toolsearch/pkg/embedding"
)

// embeddingsProvider serves an OpenAI-style /v1/embeddings whose vector
// for each input text is vec's, and returns the API's base url.
func embeddingsProvider(tb testing.TB, vec func(input string) []float32) string {
	tb.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Input []string `json:"input"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		items := make([]string, len(req.Input))
		for i, in := range req.Input {
			v := vec(in)
			nums := make([]string, len(v))
			for j, x := range v {
				nums[j] = fmt.Sprint(x)
			}
			items[i] = fmt.Sprintf(`{"object":"embedding","index":%d,"embedding":[%s]}`, i, strings.Join(nums, ","))
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"object":"list","data":[%s]}`, strings.Join(items, ","))
	}))
	tb.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

// fakeProvider serves vectors of a width the test can change, as a
// misconfigured provider (or a model swapped behind one) does.
func fakeProvider(tb testing.TB, width *atomic.Int64) string {
	tb.Helper()
	return embeddingsProvider(tb, func(in string) []float32 {
		v := make([]float32, width.Load())
		for j := range v {
			v[j] = float32((len(in)*(j+3))%17+1) / 17
		}
		return v
	})
}

// TestWidthChangeRecovers: an index built from a provider's wrong width
// must not outlive the provider's fix. Queries that disagree with the
// index fall back (and say why); the next rebuild embeds afresh instead of
// reusing the cached vectors of the wrong width.
func TestWidthChangeRecovers(t *testing.T) {
	var width atomic.Int64
	width.Store(32)
	url := fakeProvider(t, &width)
	svc := New(Config{Embedder: embedding.NewOpenAI(embedding.OpenAIConfig{BaseURL: url, APIKey: "k", MaxRetries: -1}),
		QueryCacheSize: -1, Load: func(context.Context) (*Setup, error) { return defaultSetup(t), nil }})
	if _, err := svc.Rebuild(t.Context()); err != nil {
		t.Fatal(err)
	}
	if st := svc.Status(); st.Mode != "semantic" || st.Embedder.Dimensions != 32 {
		t.Fatalf("first build: %s at %d", st.Mode, st.Embedder.Dimensions)
	}
	width.Store(64) // the provider is fixed: the model's real width
	res := mustSearch(t, svc, Request{Query: "open a pull request"})
	if !res.Degraded || res.Mode != "keyword" {
		t.Fatalf("a query of the new width against the old index: mode %s degraded %v", res.Mode, res.Degraded)
	}
	if _, err := svc.Rebuild(t.Context()); err != nil {
		t.Fatalf("rebuild after the fix: %v", err)
	}
	if st := svc.Status(); st.Mode != "semantic" || st.Embedder.Dimensions != 64 {
		t.Errorf("after the rebuild: %s at %d, want semantic at 64", st.Mode, st.Embedder.Dimensions)
	}
	if res := mustSearch(t, svc, Request{Query: "open a pull request"}); res.Degraded {
		t.Errorf("after the rebuild queries still fall back: %+v", res.Diagnostic)
	}
}

// TestMixedWidthBatchIsNotCached: when the provider's width changes
// between builds, the new vectors are not mixed with cached ones of the
// old width: the whole catalog is embedded again in one batch.
func TestMixedWidthBatchIsNotCached(t *testing.T) {
	var width atomic.Int64
	width.Store(32)
	url := fakeProvider(t, &width)
	setup := defaultSetup(t)
	svc := New(Config{Embedder: embedding.NewOpenAI(embedding.OpenAIConfig{BaseURL: url, APIKey: "k", MaxRetries: -1}), QueryCacheSize: -1})
	if _, err := svc.Build(t.Context(), setup); err != nil {
		t.Fatal(err)
	}
	width.Store(48)
	// One new tool: the build embeds only it, and finds a new width.
	snap, err := svc.Build(t.Context(), withExtraTool(t, defaultSetup(t)))
	if err != nil {
		t.Fatal(err)
	}
	if !snap.Semantic() || snap.Matrix.Dim() != 48 || snap.Embedded != snap.Catalog.Len() {
		t.Errorf("build across a width change: semantic %v, width %d, embedded %d of %d; want every tool re-embedded at 48",
			snap.Semantic(), dim(snap), snap.Embedded, snap.Catalog.Len())
	}
	// Every row is what a build at 48 from the start makes: the texts the
	// first try let go of as it embedded are read again, not sent empty.
	fresh, err := New(Config{Embedder: embedding.NewOpenAI(embedding.OpenAIConfig{BaseURL: url, APIKey: "k", MaxRetries: -1}), QueryCacheSize: -1}).
		Build(t.Context(), withExtraTool(t, defaultSetup(t)))
	if err != nil {
		t.Fatal(err)
	}
	for i := range snap.Catalog.Len() {
		if !slices.Equal(snap.Matrix.Row(i), fresh.Matrix.Row(i)) {
			t.Fatalf("row %d (%s) differs from a fresh build's", i, snap.Catalog.Tools()[i].Name)
		}
	}
}

func dim(snap *Snapshot) int {
	if snap.Matrix == nil {
		return 0
	}
	return snap.Matrix.Dim()
}

func withExtraTool(tb testing.TB, setup *Setup) *Setup {
	tb.Helper()
	extra := catalog.Tool{Server: "extra", Name: "brew_coffee", Description: "Brew a cup of coffee with the office machine."}
	setup.Catalog = catalogOf(tb, append([]catalog.Tool{extra}, setup.Catalog.Tools()...))
	return setup
}

// TestCacheIsTheIndex: a remote embedder's vectors are held once, as the
// index's rows, which the build cache refers to; a rebuild that embeds
// nothing scores exactly as the build before it.
func TestCacheIsTheIndex(t *testing.T) {
	var width atomic.Int64
	width.Store(16)
	url := fakeProvider(t, &width)
	svc := New(Config{Embedder: embedding.NewOpenAI(embedding.OpenAIConfig{BaseURL: url, APIKey: "k", MaxRetries: -1}),
		QueryCacheSize: -1, Load: func(context.Context) (*Setup, error) { return defaultSetup(t), nil }})
	first, err := svc.Rebuild(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	before := mustSearch(t, svc, Request{Query: "open a pull request", Mode: ModeSemantic, IncludeCore: ptr(false)})
	second, err := svc.Rebuild(t.Context())
	if err != nil || second.Embedded != 0 {
		t.Fatalf("rebuild: %v, embedded %d, want 0", err, second.Embedded)
	}
	after := mustSearch(t, svc, Request{Query: "open a pull request", Mode: ModeSemantic, IncludeCore: ptr(false)})
	for i := range before.Tools {
		if *before.Tools[i].Score != *after.Tools[i].Score || before.Tools[i].Name != after.Tools[i].Name {
			t.Fatalf("rank %d: %s %v before the rebuild, %s %v after", i, before.Tools[i].Name, *before.Tools[i].Score, after.Tools[i].Name, *after.Tools[i].Score)
		}
	}
	if svc.last.mx != first.Matrix || second.Matrix != first.Matrix {
		t.Fatal("the vectors kept for the next build are not the index's")
	}
}
