package search

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"weak"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolsearch/toolsearch/pkg/access"
	"github.com/toolsearch/toolsearch/pkg/embedding"
)

// gatedEmbedder is a provider (the cache applies) whose Embed of a build's
// texts (more than one), once shut, says it was entered and waits for the
// test to open it, or to fail it. A query's text passes.
type gatedEmbedder struct {
	local   *embedding.Local
	shut    bool
	entered chan struct{}
	open    chan error
}

func (g *gatedEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if g.shut && len(texts) > 1 {
		g.entered <- struct{}{}
		if err := <-g.open; err != nil {
			return nil, err
		}
	}
	return g.local.Embed(ctx, texts)
}

func (g *gatedEmbedder) Info() embedding.Info {
	return embedding.Info{Provider: "gated", Model: "m", Dimensions: g.local.Info().Dimensions}
}

// TestRebuildOverMemoryLimit: a rebuild whose new vectors the memory limit
// cannot hold beside the live heap lets the index serving go before it
// embeds, down to its sign codes where the limit holds those, and every
// key is answered by keywords, or semantically with estimates, saying
// why, until the new index is published. Under a limit that holds both,
// or none known, the index serves on. A build that then fails publishes
// its catalog ranked by keywords, fails, and asks Follow to retry.
func TestRebuildOverMemoryLimit(t *testing.T) {
	// The heap makeRoom sees is fixed, so that a limit can fall between
	// what the new vectors need beside the index and beside its codes.
	const heap = 1 << 30
	defer func(was func() uint64) { liveHeap = was }(liveHeap)
	liveHeap = func() uint64 { return heap }
	codesOnly := int64(heap + rebuildSlack) // under heap + the new vectors + slack, over it less the index plus its codes
	base := defaultSetup(t)
	tools := slices.Clone(base.Catalog.Tools())
	changed := len(tools) / 2
	for i := range changed {
		tools[i].Description += " Revised upstream."
	}
	servers := base.Catalog.Servers()
	keys := []access.Key{{Name: "all", Hash: sha256.Sum256([]byte("secret-all"))},
		{Name: "some", Hash: sha256.Sum256([]byte("secret-some")), Visibility: access.Visibility{Servers: servers[1:]}}}
	for _, tc := range []struct {
		name   string
		limit  int64
		fail   error
		drop   bool
		sketch bool // the index's codes serve
	}{
		{"no limit known", 0, nil, false, false},
		{"a limit that holds both", 1 << 50, nil, false, false},
		{"a limit under both", 1, nil, true, false},
		{"a limit under both, the provider failing", 1, errors.New("provider down"), true, false},
		{"a limit that holds the new index beside the codes", codesOnly, nil, true, true},
		{"a limit that holds the codes, the provider failing", codesOnly, errors.New("provider down"), true, true},
		// With no garbage allowed for, the new vectors would fit beside
		// the codes, but the codes are made beside the live heap, and the
		// limit is a byte short of that (set once the index is built).
		{"a limit just short of the live heap and the codes", -1, nil, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			emb := &gatedEmbedder{local: embedding.NewLocal(64), entered: make(chan struct{}), open: make(chan error)}
			reg := prometheus.NewRegistry()
			svc := New(Config{Embedder: emb, Version: "test", MemoryLimit: tc.limit, QueryCacheSize: -1, Registerer: reg})
			setup := *base
			setup.Keys = keys
			first, err := svc.Build(t.Context(), &setup)
			if err != nil {
				t.Fatal(err)
			}
			if tc.limit < 0 {
				defer func(was uint64) { rebuildSlack = was }(rebuildSlack)
				rebuildSlack = 0
				svc.cfg.MemoryLimit = heap + first.Matrix.SketchBytes() - 1
			}
			edited := withTools(t, &setup, tools)
			emb.shut = true
			type built struct {
				snap *Snapshot
				err  error
			}
			done := make(chan built, 1)
			go func() {
				snap, err := svc.Build(context.Background(), edited)
				done <- built{snap, err}
			}()
			<-emb.entered
			for _, key := range keys {
				res, err := svc.Search(t.Context(), Request{Query: "list open issues"}, access.Caller{Key: key.Name})
				if err != nil {
					t.Fatal(err)
				}
				reason := ""
				if res.Diagnostic != nil {
					reason = res.Diagnostic.EmbeddingReason
				}
				wantReason, wantMode := dropReason, ModeKeyword
				if tc.sketch {
					wantReason, wantMode = sketchReason, ModeHybrid
				}
				if res.Degraded != tc.drop || tc.drop && (reason != wantReason || res.Mode != wantMode) {
					t.Errorf("key %s during the rebuild: degraded %v (%q), mode %s; want degraded %v (%q, %s)", key.Name, res.Degraded, reason, res.Mode, tc.drop, wantReason, wantMode)
				}
				if res.IndexVersion == first.Version && tc.drop {
					t.Errorf("key %s: the index let go answers under the version it had", key.Name)
				}
			}
			st := svc.Status()
			if st.Degraded != tc.drop || tc.drop != strings.Contains(st.LastError, "memory limit") {
				t.Errorf("status during the rebuild: degraded %v, last error %q", st.Degraded, st.LastError)
			}
			if n := counterValue(t, reg, "toolsearch_index_let_go_total"); n != map[bool]float64{true: 1}[tc.drop] {
				t.Errorf("toolsearch_index_let_go_total = %v during the rebuild", n)
			}
			if tc.drop && (svc.last != nil || svc.Current().Catalog != first.Catalog) {
				t.Error("the index let go is still held for the next build, or another catalog serves")
			}
			if cur := svc.Current(); tc.drop && (cur.Semantic() != tc.sketch || tc.sketch && (!cur.Matrix.Sketched() || !strings.Contains(st.LastError, "sign codes"))) {
				t.Errorf("during the rebuild: semantic %v, last error %q; want the sign codes serving %v", cur.Semantic(), st.LastError, tc.sketch)
			}
			// Codes, or none, are counted as the vectors the next build makes.
			if cur := svc.Current(); tc.drop && svc.need(cur).VectorBytes != 0 {
				t.Errorf("the rule counts %d bytes of vectors for the index let go; want its dense figure", svc.need(cur).VectorBytes)
			}
			emb.open <- tc.fail
			b := <-done
			switch {
			case tc.fail != nil:
				switch cur := svc.Current(); {
				case tc.sketch:
					// The new catalog has no index; the old one's codes,
					// and its catalog, serve on until a build makes one.
					if !errors.Is(b.err, ErrEmbedFailed) || !cur.Matrix.Sketched() || cur.Catalog.Hash() != first.Catalog.Hash() {
						t.Fatalf("a failed build: %v; want ErrEmbedFailed and the sign codes serving", b.err)
					}
				case !errors.Is(b.err, ErrEmbedFailed) || !errors.Is(b.err, ErrDropped) || cur.Semantic() || cur.Catalog.Hash() != edited.Catalog.Hash():
					t.Fatalf("a failed build: %v; want ErrEmbedFailed and the new catalog ranked by keywords", b.err)
				}
				select {
				case <-svc.retry:
				default:
					t.Error("a failed build after letting the index go asks for no retry")
				}
			case b.err != nil:
				t.Fatal(b.err)
			default:
				want := changed
				if tc.drop {
					want = len(tools) // the rows held for reuse went with the index
				}
				if b.snap.Embedded != want {
					t.Errorf("embedded %d texts, want %d", b.snap.Embedded, want)
				}
				for _, key := range keys {
					res, err := svc.Search(t.Context(), Request{Query: "list open issues"}, access.Caller{Key: key.Name})
					if err != nil || res.Degraded {
						t.Errorf("key %s after the rebuild: %v, degraded %v", key.Name, err, res != nil && res.Degraded)
					}
					if key.Name == "some" && slices.ContainsFunc(res.Tools, func(h Hit) bool { return h.Server == servers[0] }) {
						t.Errorf("key some sees server %s", servers[0])
					}
				}
			}
			select {
			case <-svc.retry:
				if tc.fail == nil {
					t.Error("a build that made its index asks for a retry")
				}
			default:
			}
		})
	}
}

// TestFollowRetriesADroppedIndex: an operator's rebuild that let the index
// go and then failed leaves keyword ranking; Follow, which did not start
// it, builds again without a change to follow, and semantic ranking is
// back once the provider answers.
func TestFollowRetriesADroppedIndex(t *testing.T) {
	emb := &gatedEmbedder{local: embedding.NewLocal(64), entered: make(chan struct{}, 8), open: make(chan error, 8)}
	setup := defaultSetup(t)
	tools := slices.Clone(setup.Catalog.Tools())
	tools[0].Description += " Revised upstream."
	edited := withTools(t, setup, tools)
	svc := New(Config{Embedder: emb, Version: "test", MemoryLimit: 1, QueryCacheSize: -1, RetryDelay: time.Millisecond, FollowGap: time.Millisecond,
		Load: func(context.Context) (*Setup, error) { return edited, nil }})
	if _, err := svc.Build(t.Context(), setup); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	followed := make(chan struct{})
	go func() {
		defer close(followed)
		svc.Follow(ctx, make(chan struct{}))
	}()
	emb.shut = true
	emb.open <- errors.New("provider down")
	if _, err := svc.Rebuild(t.Context()); !errors.Is(err, ErrDropped) {
		t.Fatalf("the operator's rebuild: %v, want ErrDropped", err)
	}
	emb.open <- nil // Follow's rebuild
	waitFor(t, func() bool { return svc.Current().Semantic() })
	if res := mustSearch(t, svc, Request{Query: "list open issues"}); res.Degraded {
		t.Errorf("after Follow's rebuild: degraded, %+v", res.Diagnostic)
	}
	cancel()
	<-followed
}

// TestSearchWhileTheIndexIsLetGo: searches by every key, in every mode,
// while rebuilds let the index go (wholly, or to its sign codes) and make
// another, never fail or come back empty, and are degraded only for that
// reason (run with -race: the copy without the index is published while
// searches read the old one).
func TestSearchWhileTheIndexIsLetGo(t *testing.T) {
	const heap = 1 << 30
	defer func(was func() uint64) { liveHeap = was }(liveHeap)
	liveHeap = func() uint64 { return heap }
	// Every text changes: the new vectors are as large as the index.
	vectors := int64(defaultSetup(t).Catalog.Len()) * 64 * 4
	for _, tc := range []struct {
		name   string
		limit  int64
		reason string
		says   string // the status's last error
	}{
		{"wholly", 1, dropReason, "ranked by keywords"},
		{"to its codes", heap + int64(rebuildSlack) + vectors - 1, sketchReason, "sign codes"},
	} {
		t.Run(tc.name, func(t *testing.T) { searchWhileLetGo(t, tc.limit, tc.reason, tc.says) })
	}
}

func searchWhileLetGo(t *testing.T, limit int64, reason, says string) {
	base := defaultSetup(t)
	servers := base.Catalog.Servers()
	setup := *base
	setup.Keys = []access.Key{{Name: "all", Hash: sha256.Sum256([]byte("secret-all"))},
		{Name: "some", Hash: sha256.Sum256([]byte("secret-some")), Visibility: access.Visibility{Servers: servers[1:]}}}
	editions := []*Setup{&setup}
	for i := range 3 {
		tools := slices.Clone(base.Catalog.Tools())
		for j := range tools {
			tools[j].Description += strings.Repeat(" Revised.", i+1)
		}
		editions = append(editions, withTools(t, &setup, tools))
	}
	svc := New(Config{Embedder: &countingEmbedder{local: embedding.NewLocal(64)}, Version: "test", MemoryLimit: limit, QueryCacheSize: -1})
	if _, err := svc.Build(t.Context(), editions[0]); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	errs := make(chan error, 8)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; ctx.Err() == nil; i++ {
				req := Request{Query: "list open issues", Mode: []Mode{ModeHybrid, ModeSemantic, ModeKeyword}[i%3]}
				res, err := svc.Search(ctx, req, access.Caller{Key: []string{"all", "some"}[i%2]})
				switch {
				case err != nil && ctx.Err() == nil:
					errs <- err
				case err != nil:
				case len(res.Tools) == 0:
					errs <- fmt.Errorf("%s: an empty answer", req.Mode)
				case res.Degraded && (res.Diagnostic == nil || res.Diagnostic.EmbeddingReason != reason):
					errs <- fmt.Errorf("%s: degraded for another reason: %+v", req.Mode, res.Diagnostic)
				default:
					continue
				}
				return
			}
		}()
	}
	for _, e := range editions[1:] {
		if _, err := svc.Build(t.Context(), e); err != nil {
			t.Fatal(err)
		}
	}
	cancel()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if !svc.Current().Semantic() {
		t.Error("the last rebuild left no index")
	}
	if st := svc.Status(); !strings.Contains(st.LastError, says) {
		t.Errorf("status's last error %q does not say %q", st.LastError, says)
	}
}

// TestLocalRebuildOverMemoryLimit: the local embedder's rebuild makes
// every vector again, into an index about as large as the one serving; a
// limit that cannot hold it beside the live heap has that index let go
// first (a version published between the two builds, and status saying
// why), and one that can, or none known, does not.
func TestLocalRebuildOverMemoryLimit(t *testing.T) {
	setup := defaultSetup(t)
	for _, tc := range []struct {
		name  string
		limit int64
		drop  bool
	}{
		{"no limit known", 0, false},
		{"a limit that holds both", 1 << 50, false},
		{"a limit under both", 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := New(Config{Embedder: embedding.NewLocal(64), Version: "test", MemoryLimit: tc.limit})
			first, err := svc.Build(t.Context(), setup)
			if err != nil {
				t.Fatal(err)
			}
			second, err := svc.Build(t.Context(), editedSetup(t, setup))
			if err != nil {
				t.Fatal(err)
			}
			published := 1 // the rebuild's own
			if tc.drop {
				published = 2 // and the snapshot without its index before it
			}
			var a, b int
			fmt.Sscanf(first.Version, "%d-", &a)
			fmt.Sscanf(second.Version, "%d-", &b)
			st := svc.Status()
			if b-a != published || tc.drop != strings.Contains(st.LastError, "memory limit") || !second.Semantic() {
				t.Errorf("versions %s then %s, last error %q, semantic %v; want %d published, the limit named %v", first.Version, second.Version, st.LastError, second.Semantic(), published, tc.drop)
			}
		})
	}
}

// counterValue is the value of reg's counter name (without labels).
func counterValue(tb testing.TB, reg prometheus.Gatherer, name string) float64 {
	tb.Helper()
	families, err := reg.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == name && len(f.GetMetric()) == 1 {
			return f.GetMetric()[0].GetCounter().GetValue()
		}
	}
	tb.Fatalf("no counter %s", name)
	return 0
}

// viewsSetup is the default catalog with four keys: one that sees every
// tool, "some" and "same" that see the same ones (one view), and "fewer"
// (another).
func viewsSetup(tb testing.TB) *Setup {
	setup := *defaultSetup(tb)
	servers := setup.Catalog.Servers()
	some := access.Visibility{Servers: servers[1:]}
	setup.Keys = []access.Key{{Name: "all", Hash: sha256.Sum256([]byte("a"))},
		{Name: "some", Hash: sha256.Sum256([]byte("b")), Visibility: some},
		{Name: "same", Hash: sha256.Sum256([]byte("c")), Visibility: some},
		{Name: "fewer", Hash: sha256.Sum256([]byte("d")), Visibility: access.Visibility{Servers: servers[2:]}}}
	return &setup
}

// The codes a rebuild short of memory would keep are counted for the
// index and for each view once, however many keys share it, and a view
// reads the index's.
func TestSketchBytesCountsViews(t *testing.T) {
	svc := New(Config{Embedder: &countingEmbedder{local: embedding.NewLocal(64)}, Version: "test", QueryCacheSize: -1})
	snap, err := svc.Build(t.Context(), viewsSetup(t))
	if err != nil {
		t.Fatal(err)
	}
	some1, fewer := snap.views["some"], snap.views["fewer"]
	if some1 == nil || snap.views["same"] != some1 || fewer == nil || fewer == some1 {
		t.Fatalf("views: %v", snap.views)
	}
	// A provider's views read the index's rows, and would read its codes:
	// 4 bytes a row each.
	want := uint64(snap.Matrix.SketchBytes()) + 4*uint64(some1.Catalog.Len()+fewer.Catalog.Len())
	if got := sketchBytes(snap); got != want {
		t.Errorf("sketchBytes = %d, want %d (the index and two views)", got, want)
	}
	// And once the codes serve, each view reads them.
	svc.dropDense(snap, "test", true)
	cur := svc.Current()
	for _, name := range []string{"some", "fewer"} {
		v := cur.views[name]
		if !v.Matrix.Sketched() || v.Matrix.Bytes() != int64(4*v.Catalog.Len()) {
			t.Errorf("view %s: sketched %v, %d bytes; want the index's codes read by its %d rows", name, v.Matrix.Sketched(), v.Matrix.Bytes(), v.Catalog.Len())
		}
	}
}

// A rebuild that changes only tools a key cannot see leaves nothing of
// the index it replaced alive: a view reads its index's rows
// (index.Matrix.Subset), so a view kept from the last build would keep
// that whole index; the key's view reads the new one's.
func TestViewsLetTheOldIndexGo(t *testing.T) {
	svc := New(Config{Embedder: &countingEmbedder{local: embedding.NewLocal(64)}, Version: "test", QueryCacheSize: -1})
	setup := viewsSetup(t)
	first, err := svc.Build(t.Context(), setup)
	if err != nil {
		t.Fatal(err)
	}
	old := weak.Make(first.Matrix)
	hidden := first.Catalog.Servers()[0] // seen by "all" alone
	tools := slices.Clone(setup.Catalog.Tools())
	for i := range tools {
		if tools[i].Server == hidden {
			tools[i].Description += " Revised."
		}
	}
	second, err := svc.Build(t.Context(), withTools(t, setup, tools))
	if err != nil {
		t.Fatal(err)
	}
	if second.Matrix == first.Matrix || second.views["some"] == first.views["some"] {
		t.Fatal("the rebuild made no new index")
	}
	first = nil
	runtime.GC()
	runtime.GC()
	if old.Value() != nil {
		t.Error("the replaced index is still alive")
	}
	res, err := svc.Search(t.Context(), Request{Query: "list open issues"}, access.Caller{Key: "some"})
	if err != nil || len(res.Tools) == 0 || res.Degraded {
		t.Fatalf("the view after the rebuild: %v, %+v", err, res)
	}
}
