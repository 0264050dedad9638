package search

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/toolsearch/toolsearch/pkg/access"
	"github.com/toolsearch/toolsearch/pkg/analysis"
	"github.com/toolsearch/toolsearch/pkg/catalog"
	"github.com/toolsearch/toolsearch/pkg/embedding"
	"github.com/toolsearch/toolsearch/pkg/index"
	"github.com/toolsearch/toolsearch/pkg/sizing"
	"github.com/toolsearch/toolsearch/pkg/snapshot"
)

// A build analyses each tool's text once, in parts, for BM25 and the local
// embedder; the rows it makes are bit for bit what embedding each tool's
// whole Text gives, names split or not, ASCII or not.
func TestBuildEmbedsText(t *testing.T) {
	def, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	odd := catalog.Server{Name: "MyServer.v2", Tools: []catalog.Tool{
		{Name: "getS3Object", Description: "Fetch an object from a bucket."},
		{Name: "lint", Title: "Linter", Description: "Überprüft Dateien; the files' names.",
			Schemas: catalog.MakeSchemas([]byte(`{"type":"object","properties":{"filePath":{"type":"string","description":"Which file"},"mode":{"enum":["fast","Thorough"]}}}`), nil, nil)},
		{Name: "plain", Description: ""},
	}}
	parts := []catalog.Part{}
	if dp, err := catalog.DefaultPart(); err == nil {
		parts = append(parts, dp)
	}
	parts = append(parts, catalog.Part{Source: "odd", Servers: []catalog.Server{odd}})
	cat, err := catalog.New(parts)
	if err != nil {
		t.Fatal(err)
	}
	if cat.Len() <= def.Len() {
		t.Fatalf("catalog of %d tools", cat.Len())
	}
	local := embedding.NewLocal(256)
	snap, err := New(Config{Embedder: local}).Build(t.Context(), &Setup{Catalog: cat})
	if err != nil {
		t.Fatal(err)
	}
	texts := make([]string, cat.Len())
	for i, tool := range cat.Tools() {
		texts[i] = tool.Text()
	}
	vecs, err := local.Fit(texts).Embed(t.Context(), texts)
	if err != nil {
		t.Fatal(err)
	}
	want, err := index.Adopt(slices.Concat(vecs...), len(vecs), len(vecs[0]), nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range cat.Len() {
		if !slices.Equal(snap.Matrix.Row(i), want.Row(i)) {
			t.Errorf("%s: the build's row differs from embedding its text %q", cat.Tool(i).ID(), texts[i])
		}
	}
}

// A rebuild of the same tools (learning's, or a refresh that changed no
// tool) takes the serving snapshot's dense index and fitted embedder,
// for the whole catalog and for each limited key's view, instead of
// making them again; it answers exactly as a fresh build from the same
// tally. A changed catalog is embedded afresh.
func TestRebuildOfSameToolsSharesVectors(t *testing.T) {
	full, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	keys := []access.Key{
		{Name: "k", Hash: sha256.Sum256([]byte("secret-k")), Visibility: access.Visibility{Servers: full.Servers()[:3]}},
		{Name: "all", Hash: sha256.Sum256([]byte("secret-all"))},
	}
	r := rand.New(rand.NewPCG(5, 6))
	tally := randomLearned(r, full.Tools(), full.Tools()[:5])
	for _, c := range []struct {
		name     string
		embedder func() Embedder
	}{
		{"local", func() Embedder { return embedding.NewLocal(256) }},
		{"provider", func() Embedder { return &countingEmbedder{local: embedding.NewLocal(64)} }},
	} {
		t.Run(c.name, func(t *testing.T) {
			setup := defaultSetup(t)
			setup.Keys = keys
			store := &staticStore{} // its tally is set below
			svc := New(Config{Embedder: c.embedder(), Version: "test", Learning: &Learning{Store: store}})
			first, err := svc.Build(t.Context(), setup)
			if err != nil {
				t.Fatal(err)
			}
			store.l = tally
			relearned, err := svc.Relearn(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if relearned.learned.Empty() {
				t.Fatal("the tally taught the rebuild nothing")
			}
			if relearned.Matrix != first.Matrix || relearned.views["k"].Matrix != first.views["k"].Matrix {
				t.Error("a rebuild of the same tools made its vectors again")
			}
			if relearned.Keywords == first.Keywords {
				t.Error("the rebuild kept the keyword index, which holds what was learned")
			}

			fresh := New(Config{Embedder: c.embedder(), Version: "test", Learning: &Learning{Store: staticStore{tally}}})
			fresh.learner.load(t.Context())
			if _, err := fresh.Build(t.Context(), setup); err != nil {
				t.Fatal(err)
			}
			for i := range 40 {
				req := randomRequest(r, full.Tools(), full.Tools(), setup.Templates)
				req.Mode = []Mode{ModeHybrid, ModeSemantic, ModeKeyword}[i%3]
				for _, caller := range []access.Caller{{Key: "k"}, {Key: "all"}} {
					a, errA := svc.Search(t.Context(), req, caller)
					b, errB := fresh.Search(t.Context(), req, caller)
					if fmt.Sprint(errA) != fmt.Sprint(errB) {
						t.Fatalf("%+v as %s: %v, fresh build %v", req, caller.Key, errA, errB)
					}
					if errA == nil && fmt.Sprint(scored(a.Tools), deref(a.Confidence)) != fmt.Sprint(scored(b.Tools), deref(b.Confidence)) {
						t.Fatalf("%+v as %s:\nrebuilt %v %v\nfresh   %v %v", req, caller.Key, scored(a.Tools), deref(a.Confidence), scored(b.Tools), deref(b.Confidence))
					}
				}
			}

			edited, err := svc.Build(t.Context(), editedSetup(t, setup))
			if err != nil {
				t.Fatal(err)
			}
			if edited.Matrix == relearned.Matrix || edited.Matrix.Rows() != relearned.Matrix.Rows()+1 {
				t.Error("a changed catalog was not embedded afresh")
			}
		})
	}
}

// TestRebuildSharesUnchangedRows: a provider's rebuild after one text
// changed embeds that text alone, and its index shares with the index
// serving every slab of rows the edit left whole, scoring as a fresh
// build of the edited catalog does.
func TestRebuildSharesUnchangedRows(t *testing.T) {
	// 8,192 dimensions make slabs of 64 rows: the default catalog's 73
	// tools in two.
	emb := func() Embedder { return &countingEmbedder{local: embedding.NewLocal(8192)} }
	setup := defaultSetup(t)
	tools := slices.Clone(setup.Catalog.Tools())
	for _, tc := range []struct {
		name   string
		edit   func([]catalog.Tool) []catalog.Tool
		shared int
	}{
		{"last tool's text", func(ts []catalog.Tool) []catalog.Tool {
			ts[len(ts)-1].Description += " Now with more detail."
			return ts
		}, 64},
		{"first tool's text", func(ts []catalog.Tool) []catalog.Tool {
			ts[0].Description += " Now with more detail."
			return ts
		}, 0},
		{"last tool removed", func(ts []catalog.Tool) []catalog.Tool { return ts[:len(ts)-1] }, 64},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := New(Config{Embedder: emb(), Version: "test"})
			first, err := svc.Build(t.Context(), setup)
			if err != nil {
				t.Fatal(err)
			}
			edited := withTools(t, setup, tc.edit(slices.Clone(tools)))
			second, err := svc.Build(t.Context(), edited)
			if err != nil {
				t.Fatal(err)
			}
			if second.Embedded > 1 {
				t.Errorf("embedded %d texts, want at most 1", second.Embedded)
			}
			shared := 0
			for i := range second.Matrix.Rows() {
				if &second.Matrix.Row(i)[0] == &first.Matrix.Row(i)[0] {
					shared++
				}
			}
			if shared != tc.shared {
				t.Errorf("%d rows shared with the index serving, want %d", shared, tc.shared)
			}
			fresh := New(Config{Embedder: emb(), Version: "test"})
			if _, err := fresh.Build(t.Context(), edited); err != nil {
				t.Fatal(err)
			}
			r := rand.New(rand.NewPCG(7, 8))
			for i := range 30 {
				req := randomRequest(r, edited.Catalog.Tools(), edited.Catalog.Tools(), setup.Templates)
				req.Mode = []Mode{ModeHybrid, ModeSemantic, ModeKeyword}[i%3]
				a, errA := svc.Search(t.Context(), req, access.Caller{})
				b, errB := fresh.Search(t.Context(), req, access.Caller{})
				if fmt.Sprint(errA) != fmt.Sprint(errB) || errA == nil && fmt.Sprint(scored(a.Tools)) != fmt.Sprint(scored(b.Tools)) {
					t.Fatalf("%+v:\nrebuilt %v %v\nfresh   %v %v", req, scored(a.Tools), errA, scored(b.Tools), errB)
				}
			}
		})
	}
}

// TestViewSharesSlabs: a key that sees every row of a slab of a
// provider's index shares that slab, and scores as the index does.
func TestViewSharesSlabs(t *testing.T) {
	setup := defaultSetup(t)
	servers := setup.Catalog.Servers()
	setup.Keys = []access.Key{{Name: "most", Hash: sha256.Sum256([]byte("secret-most")), Visibility: access.Visibility{Servers: servers[:len(servers)-1]}}}
	// Slabs of 64 rows, as in TestRebuildSharesUnchangedRows.
	snap, err := New(Config{Embedder: &countingEmbedder{local: embedding.NewLocal(8192)}}).Build(t.Context(), setup)
	if err != nil {
		t.Fatal(err)
	}
	view := snap.views["most"]
	if view == nil || view.Matrix.Rows() < 64 {
		t.Fatalf("want a view of at least 64 rows, got %v", view)
	}
	for i := range 64 {
		if &view.Matrix.Row(i)[0] != &snap.Matrix.Row(i)[0] {
			t.Fatalf("view row %d is a copy", i)
		}
	}
	for i := 64; i < view.Matrix.Rows(); i++ {
		if !slices.Equal(view.Matrix.Row(i), snap.Matrix.Row(i)) {
			t.Fatalf("view row %d differs from the index's", i)
		}
	}
}

// TestPreloadHeldOnce: a snapshot file's index is the build's, with no
// call to the provider and no copy of its vectors, and the service lets
// go of it once published (held for the process's life otherwise); the
// next build of a changed catalog shares its slabs, as after a build that
// embedded. A stale file is let go after the first build too.
func TestPreloadHeldOnce(t *testing.T) {
	setup := defaultSetup(t)
	// Slabs of 64 rows, as in TestRebuildSharesUnchangedRows.
	emb := &countingEmbedder{local: embedding.NewLocal(8192)}
	built, err := New(Config{Embedder: emb}).Build(t.Context(), setup)
	if err != nil {
		t.Fatal(err)
	}
	var vecs [][]float32
	for _, v := range built.Matrix.Vectors() {
		vecs = append(vecs, slices.Clone(v))
	}
	info := emb.Info()
	path := filepath.Join(t.TempDir(), "test.snap")
	var buf bytes.Buffer
	if err := snapshot.Write(&buf, snapshot.Header{Provider: info.Provider, Model: info.Model,
		Dimensions: info.Dimensions, CatalogHash: setup.Catalog.Hash(), Tools: setup.Catalog.Len()}, slices.All(vecs)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	h, mx, err := snapshot.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	file := &Preload{Source: path, Header: h, Matrix: mx}

	emb = &countingEmbedder{local: embedding.NewLocal(8192)}
	svc := New(Config{Embedder: emb, Preload: file})
	first, err := svc.Build(t.Context(), setup)
	if err != nil {
		t.Fatal(err)
	}
	if !first.Preloaded || emb.texts.Load() != 0 {
		t.Fatalf("preloaded %v, %d texts embedded, want the file's vectors alone", first.Preloaded, emb.texts.Load())
	}
	if svc.preload != nil || file.Matrix != nil {
		t.Error("the service still holds the file's index beside the snapshot's")
	}
	for i, v := range vecs {
		// A file's rows are normalised as they are read: it may not be
		// this service's.
		want := slices.Clone(v)
		index.Normalize(want)
		if !slices.Equal(first.Matrix.Row(i), want) || &first.Matrix.Row(i)[0] != &mx.Row(i)[0] {
			t.Fatalf("row %d is not the file's, normalised, in the file's index", i)
		}
	}
	tools := slices.Clone(setup.Catalog.Tools())
	tools[len(tools)-1].Description += " Now with more detail."
	second, err := svc.Build(t.Context(), withTools(t, setup, tools))
	if err != nil {
		t.Fatal(err)
	}
	if second.Embedded != 1 || &second.Matrix.Row(0)[0] != &first.Matrix.Row(0)[0] {
		t.Errorf("after a preloaded build, a rebuild embedded %d texts and shared row 0: %v; want 1 and true", second.Embedded, &second.Matrix.Row(0)[0] == &first.Matrix.Row(0)[0])
	}

	// A stale file (another catalog's) is let go too once a build that
	// embedded is published.
	stale := &Preload{Source: "stale.snap", Matrix: mx, Header: h}
	stale.Header.CatalogHash = "another catalog"
	emb = &countingEmbedder{local: embedding.NewLocal(8192)}
	svc = New(Config{Embedder: emb, Preload: stale})
	snap, err := svc.Build(t.Context(), setup)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Preloaded || snap.Embedded != setup.Catalog.Len() || svc.preload != nil || stale.Matrix != nil {
		t.Errorf("a stale file: preloaded %v, embedded %d of %d, still held %v", snap.Preloaded, snap.Embedded, setup.Catalog.Len(), svc.preload != nil || stale.Matrix != nil)
	}
}

// scored is each hit's id and score.
func scored(hits []Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = fmt.Sprint(h.Server, "/", h.Name, " ", deref(h.Score))
	}
	return out
}

// TestColumnsForSparseQueries: an index queried sparsely (the local
// embedder's) keeps its columns beside its rows; one queried densely (a
// provider's) holds its vectors once.
func TestColumnsForSparseQueries(t *testing.T) {
	var width atomic.Int64
	width.Store(32)
	for _, tt := range []struct {
		name   string
		emb    embedding.Embedder
		copies int64
	}{
		{"local", embedding.NewLocal(0), 2},
		{"provider", embedding.NewOpenAI(embedding.OpenAIConfig{BaseURL: fakeProvider(t, &width), APIKey: "k", MaxRetries: -1}), 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			snap, err := New(Config{Embedder: tt.emb}).Build(t.Context(), defaultSetup(t))
			if err != nil {
				t.Fatal(err)
			}
			mx := snap.Matrix
			if want := tt.copies * int64(mx.Rows()*mx.Dim()*4); mx.Bytes() != want {
				t.Errorf("index of %d×%d holds %d bytes, want %d", mx.Rows(), mx.Dim(), mx.Bytes(), want)
			}
		})
	}
}

// TestBoundGarbage checks the percentage a rebuild's embedding collects
// at: about rebuildSlack over the heap it will hold, never above what the
// process had (a stricter GOGC stays), and never 0, which would collect
// without pause.
func TestBoundGarbage(t *testing.T) {
	tests := []struct {
		name      string
		was, want int
		heap      uint64
	}{
		{name: "two 100,000-tool snapshots", was: rebuildGCPercent, heap: 1600 << 20, want: 2},
		{name: "heap past 100 x slack", was: rebuildGCPercent, heap: 8 << 30, want: 1},
		{name: "small heap keeps the build's percentage", was: buildGCPercent, heap: 100 << 20, want: buildGCPercent},
		{name: "mid heap", was: buildGCPercent, heap: 200 << 20, want: 16},
		{name: "stricter GOGC stays", was: 1, heap: 400 << 20, want: 1},
		{name: "unknown heap", was: rebuildGCPercent, heap: 0, want: rebuildGCPercent},
	}
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			debug.SetGCPercent(tt.was)
			boundGarbage(tt.heap)
			if got := debug.SetGCPercent(tt.was); got != tt.want {
				t.Errorf("percentage %d, want %d", got, tt.want)
			}
		})
	}
}

// TestBuildGCPercent: a first build through the local embedder collects
// at the process's own percentage, and its views at buildGCPercent; a
// provider's first build, and any rebuild (which holds the snapshot
// serving beside the one it makes), at buildGCPercent; a process that
// collects more often keeps its own percentage. The embedders read the
// percentage while the build asks them for vectors, the views' last.
func TestBuildGCPercent(t *testing.T) {
	var during atomic.Int64
	url := embeddingsProvider(t, func(in string) []float32 {
		during.Store(int64(gcPercent()))
		return []float32{1, float32(len(in)%7 + 1)}
	})
	embedders := map[string]func() Embedder{
		"local": func() Embedder { return gcReading{embedding.NewLocal(0), &during} },
		"provider": func() Embedder {
			return embedding.NewOpenAI(embedding.OpenAIConfig{BaseURL: url, APIKey: "k", MaxRetries: -1})
		},
	}
	// A key that sees only github has a view of its own, fitted last.
	limited := func(setup *Setup) *Setup {
		setup.Keys = []access.Key{{Name: "gh", Hash: sha256.Sum256([]byte("secret-gh")), Visibility: access.Visibility{Servers: []string{"github"}}}}
		return setup
	}
	for _, tt := range []struct {
		embedder     string
		process      int
		views        bool
		first, again int
	}{
		{"local", 100, false, 100, buildGCPercent},
		{"local", 60, false, 60, buildGCPercent},
		{"local", 10, false, 10, 10},
		{"local", -1, false, -1, -1}, // GOGC=off stays off
		{"local", 100, true, buildGCPercent, buildGCPercent},
		{"provider", 100, false, buildGCPercent, buildGCPercent},
		{"provider", 10, false, 10, 10},
	} {
		t.Run(fmt.Sprintf("%s/GOGC=%d/views=%v", tt.embedder, tt.process, tt.views), func(t *testing.T) {
			defer debug.SetGCPercent(debug.SetGCPercent(tt.process))
			svc := New(Config{Embedder: embedders[tt.embedder](), QueryCacheSize: -1})
			for i, setup := range []*Setup{defaultSetup(t), withExtraTool(t, defaultSetup(t))} {
				if tt.views {
					setup = limited(setup)
				}
				during.Store(-2)
				if _, err := svc.Build(t.Context(), setup); err != nil {
					t.Fatal(err)
				}
				want := []int{tt.first, tt.again}[i]
				if got := during.Load(); got != int64(want) {
					t.Errorf("build %d collected at %d %%, want %d", i+1, got, want)
				}
				if got := gcPercent(); got != tt.process {
					t.Errorf("after build %d the percentage is %d, not the process's %d", i+1, got, tt.process)
				}
			}
		})
	}
}

// gcReading is the local embedder, reading the collector's percentage
// when a build fits it.
type gcReading struct {
	*embedding.Local
	during *atomic.Int64
}

func (g gcReading) FitEmbedCorpus(ctx context.Context, c *analysis.Corpus, set embedding.Rows) (embedding.Embedder, error) {
	g.during.Store(int64(gcPercent()))
	return g.Local.FitEmbedCorpus(ctx, c, set)
}

// TestBuildRestoresGCPercent: a build gives back the process's own
// collector percentage, a stricter GOGC included, whatever it lowered it
// to meanwhile. rebuildSlack of a byte has a rebuild's embedding collect
// at 1 %, below the GOGC of 7 the process runs with here.
func TestBuildRestoresGCPercent(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(7))
	defer func(was uint64) { rebuildSlack = was }(rebuildSlack)
	rebuildSlack = 1
	var width atomic.Int64
	width.Store(16)
	svc := New(Config{Embedder: embedding.NewOpenAI(embedding.OpenAIConfig{BaseURL: fakeProvider(t, &width), APIKey: "k", MaxRetries: -1}), QueryCacheSize: -1})
	// The first build, then a rebuild that embeds a tool, which bounds its
	// garbage.
	for _, setup := range []*Setup{defaultSetup(t), withExtraTool(t, defaultSetup(t))} {
		if _, err := svc.Build(t.Context(), setup); err != nil {
			t.Fatal(err)
		}
		if got := debug.SetGCPercent(7); got != 7 {
			t.Fatalf("after a build the collector's percentage is %d, want the process's 7", got)
		}
	}
}

// A rebuild of an unchanged catalog keeps the catalog serving and lets
// the copy just loaded go; a changed one is the new snapshot's own.
func TestRebuildSharesAnUnchangedCatalog(t *testing.T) {
	svc := newService(t, nil)
	first := mustBuild(t, svc)
	again, err := svc.Rebuild(t.Context()) // loads the default catalog afresh
	if err != nil {
		t.Fatal(err)
	}
	if again.Catalog != first.Catalog {
		t.Error("an unchanged catalog loaded again is held twice")
	}
	part, err := catalog.DefaultPart()
	if err != nil {
		t.Fatal(err)
	}
	part.Servers[0].Tools[0].Description += " Changed."
	cat, err := catalog.New([]catalog.Part{part})
	if err != nil {
		t.Fatal(err)
	}
	setup := defaultSetup(t)
	setup.Catalog = cat
	changed, err := svc.Build(t.Context(), setup)
	if err != nil {
		t.Fatal(err)
	}
	if changed.Catalog != cat {
		t.Error("a changed catalog was not the new snapshot's")
	}
}

// Status and the log compare the container's memory limit with what the
// catalog served needs (package sizing): a catalog over the limit is
// warned of once, not at each rebuild of it; one within it, never.
func TestMemoryLimitAgainstNeed(t *testing.T) {
	for _, tt := range []struct {
		name  string
		limit int64
		warns int
	}{
		{"no limit known", 0, 0},
		{"a limit under the need", 64 << 20, 1},
		{"a limit over it", 4 << 30, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var log bytes.Buffer
			svc := New(Config{Embedder: embedding.NewLocal(256), Version: "test", MemoryLimit: tt.limit, Connections: 100, BodyBudget: 1 << 20,
				Logger: slog.New(slog.NewJSONHandler(&log, &slog.HandlerOptions{Level: slog.LevelWarn})),
				Load:   func(context.Context) (*Setup, error) { return defaultSetup(t), nil }})
			snap := mustBuild(t, svc)
			if _, err := svc.Rebuild(t.Context()); err != nil {
				t.Fatal(err)
			}
			want := sizing.Catalog{Tools: snap.Catalog.Len(), TextBytes: snap.Catalog.Bytes(), Dim: 256, Local: true, VectorBytes: snap.Matrix.Bytes()}.Limit(100, false, 1<<20)
			st := svc.Status()
			if st.MemoryNeededBytes != want || st.MemoryLimitBytes != tt.limit {
				t.Errorf("status: needed %d, limit %d; want %d, %d", st.MemoryNeededBytes, st.MemoryLimitBytes, want, tt.limit)
			}
			if got := strings.Count(log.String(), "the memory limit is under"); got != tt.warns {
				t.Errorf("%d warnings over two builds, want %d: %s", got, tt.warns, log.String())
			}
		})
	}
}

// A rebuild whose config file changed where only a start applies it
// says so in status' policy warnings while the change is unapplied, and
// in the log once for each set of sections.
func TestStartupChangesWarned(t *testing.T) {
	var log bytes.Buffer
	changes := [][]string{nil, {"upstreams"}, {"upstreams"}, {"upstreams", "limits"}, nil, {"upstreams"}}
	build := 0
	svc := New(Config{Embedder: embedding.NewLocal(256), Version: "test",
		Logger: slog.New(slog.NewJSONHandler(&log, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Load: func(context.Context) (*Setup, error) {
			setup := defaultSetup(t)
			setup.StartupChanges = changes[build]
			return setup, nil
		}})
	mustBuild(t, svc)
	for build = 1; build < len(changes); build++ {
		if _, err := svc.Rebuild(t.Context()); err != nil {
			t.Fatal(err)
		}
		var warned []string
		for _, w := range svc.Status().PolicyWarnings {
			if strings.Contains(w, "a start applies them") {
				warned = append(warned, w)
			}
		}
		if want := len(changes[build]) > 0; (len(warned) == 1) != want || want && !strings.Contains(warned[0], strings.Join(changes[build], ", ")) {
			t.Errorf("rebuild %d of %q: policy warnings %q", build, changes[build], warned)
		}
	}
	if got := strings.Count(log.String(), "only a start applies it"); got != 3 {
		t.Errorf("%d warnings in the log, want 3 (upstreams; upstreams, limits; upstreams again after none): %s", got, log.String())
	}
}

// The last index finds each text's first row, keeps runs of rows in
// order (a repeated text inside a run takes the run's row), and finds
// nothing for a text it never held.
func TestLastIndexSources(t *testing.T) {
	key := func(s string) [32]byte { return sha256.Sum256([]byte(s)) }
	last := newLastIndex(nil, [][32]byte{key("c"), key("a"), key("b"), key("a"), key("d")})
	for _, c := range []struct {
		name string
		keys []string
		want []int
	}{
		{"the same texts", []string{"c", "a", "b", "a", "d"}, []int{0, 1, 2, 3, 4}},
		{"a repeated text alone takes its first row", []string{"a", "x", "a"}, []int{1, -1, 1}},
		{"a run continues past a repeat", []string{"b", "a", "d"}, []int{2, 3, 4}},
		{"reordered", []string{"d", "b", "c"}, []int{4, 2, 0}},
		{"none known", []string{"x", "y"}, []int{-1, -1}},
		{"empty", nil, []int{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			keys := make([][32]byte, len(c.keys))
			for i, s := range c.keys {
				keys[i] = key(s)
			}
			if got := last.sources(keys); !slices.Equal(got, c.want) {
				t.Errorf("sources = %v, want %v", got, c.want)
			}
		})
	}
	var none *lastIndex
	if got := none.sources([][32]byte{key("a")}); !slices.Equal(got, []int{-1}) {
		t.Errorf("no last index: sources = %v, want [-1]", got)
	}
}

// A service built without views (the commands that search as no key)
// makes none, and refuses a key that sees only some tools rather than
// answer it from the whole catalog; a key that sees every tool searches.
func TestNoViews(t *testing.T) {
	svc := New(Config{Embedder: embedding.NewLocal(256), Version: "test", QueryCacheSize: -1, NoViews: true})
	snap, err := svc.Build(t.Context(), viewsSetup(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.views) != 0 || len(svc.need(snap).Views) != 0 {
		t.Errorf("%d views built, %d counted; want none", len(snap.views), len(svc.need(snap).Views))
	}
	for _, tt := range []struct {
		key  string
		want error
	}{{"all", nil}, {"some", access.ErrUnauthorized}, {"fewer", access.ErrUnauthorized}} {
		res, err := svc.Search(t.Context(), Request{Query: "send a message"}, access.Caller{Key: tt.key})
		if !errors.Is(err, tt.want) || tt.want == nil && len(res.Tools) == 0 {
			t.Errorf("key %q: %v (%d tools); want %v", tt.key, err, len(res.Tools), tt.want)
		}
	}
}

// A search as no key, which a service with keys refuses, is the
// operator's where Config.Operator says so (toolsearch eval and query in a
// deployment's environment): the whole catalog answers it, as it answers
// the key that sees every tool. Keys are still checked as before.
func TestOperator(t *testing.T) {
	for _, operator := range []bool{false, true} {
		svc := New(Config{Embedder: embedding.NewLocal(256), Version: "test", QueryCacheSize: -1, NoViews: true, Operator: operator})
		if _, err := svc.Build(t.Context(), viewsSetup(t)); err != nil {
			t.Fatal(err)
		}
		k := 20
		req := Request{Query: "send a message", TopK: &k}
		all, err := svc.Search(t.Context(), req, access.Caller{Key: "all"})
		if err != nil {
			t.Fatal(err)
		}
		res, err := svc.Search(t.Context(), req, access.Caller{})
		switch {
		case !operator && !errors.Is(err, access.ErrUnauthorized):
			t.Errorf("no key, not the operator: %v (%d tools), want %v", err, len(res.Tools), access.ErrUnauthorized)
		case operator && err != nil:
			t.Errorf("no key, the operator: %v", err)
		case operator && !slices.EqualFunc(res.Tools, all.Tools, func(a, b Hit) bool { return a.Server == b.Server && a.Name == b.Name }):
			t.Errorf("the operator's answer %v differs from the key that sees every tool's %v", res.Tools, all.Tools)
		}
		if _, err := svc.Search(t.Context(), req, access.Caller{Key: "some"}); !errors.Is(err, access.ErrUnauthorized) {
			t.Errorf("operator %v: a key that sees only some tools, with no views built: %v, want %v", operator, err, access.ErrUnauthorized)
		}
	}
}

// What the rule reads of a snapshot counts each distinct view of keys
// that see only some tools, as a catalog of its own.
func TestNeedCountsViews(t *testing.T) {
	svc := New(Config{Embedder: embedding.NewLocal(256), Version: "test", QueryCacheSize: -1})
	snap, err := svc.Build(t.Context(), viewsSetup(t))
	if err != nil {
		t.Fatal(err)
	}
	got := svc.need(snap)
	var tools []int
	for _, v := range got.Views {
		tools = append(tools, v.Tools)
	}
	slices.Sort(tools)
	want := []int{snap.views["fewer"].Catalog.Len(), snap.views["some"].Catalog.Len()}
	if got.Tools != snap.Catalog.Len() || !slices.Equal(tools, want) {
		t.Errorf("need: %d tools, views of %v; want %d, views of %v", got.Tools, tools, snap.Catalog.Len(), want)
	}
	// The vectors are counted as built, the local embedder's views' too.
	if got.VectorBytes != snap.Matrix.Bytes() {
		t.Errorf("need counts %d bytes of vectors, the index holds %d", got.VectorBytes, snap.Matrix.Bytes())
	}
	for _, v := range got.Views {
		if v.VectorBytes <= 0 {
			t.Errorf("a view of %d tools counts %d bytes of vectors", v.Tools, v.VectorBytes)
		}
	}
	if svc.Status().MemoryNeededBytes <= (sizing.Catalog{Tools: got.Tools, TextBytes: got.TextBytes, Dim: got.Dim, Local: got.Local}).Limit(0, false, 0) {
		t.Error("the views add nothing to the figure status shows")
	}
}
