package search

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/toolsearch/toolsearch/pkg/access"
	"github.com/toolsearch/toolsearch/pkg/catalog"
	"github.com/toolsearch/toolsearch/pkg/embedding"
	"github.com/toolsearch/toolsearch/pkg/index"
	"github.com/toolsearch/toolsearch/pkg/learn"
)

// BenchmarkQuery is one whole search (operators, query embedding, ranking,
// confidence, core tools, rendering) over the default catalog with the
// local embedder at its default width, as `make run` serves it, cycling
// through the project's own eval queries. It is the in-process part of
// what `make load` drives over HTTP.
func BenchmarkQuery(b *testing.B) {
	queries := evalQueries(b)
	svc := New(Config{Embedder: embedding.NewLocal(0), Version: "bench"})
	if _, err := svc.Build(b.Context(), defaultSetup(b)); err != nil {
		b.Fatal(err)
	}
	for _, mode := range []Mode{ModeHybrid, ModeSemantic, ModeKeyword} {
		b.Run(string(mode), func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := svc.Search(b.Context(), Request{Query: queries[i%len(queries)], Mode: mode}, access.Caller{}); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// BenchmarkConversation is BenchmarkQuery's hybrid search of a router's
// conversation: an earlier task's two turns, then a new ask, read as the
// ask and the earlier turns' words apart (two analyses, two sparse
// embeddings, two BM25 preparations).
func BenchmarkConversation(b *testing.B) {
	svc := New(Config{Embedder: embedding.NewLocal(0), Version: "bench"})
	if _, err := svc.Build(b.Context(), defaultSetup(b)); err != nil {
		b.Fatal(err)
	}
	msgs := []Message{
		{Role: "user", Content: "Which CI runs failed on main today?"},
		{Role: "assistant", Content: "Two workflow runs failed on main: integration tests at 10:14 and lint at 13:02."},
		{Role: "user", Content: "set my status to out sick until tomorrow"},
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := svc.Search(b.Context(), Request{Messages: msgs}, access.Caller{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkQueryLearning is BenchmarkQuery's hybrid search with learning
// on (a file store, nothing learned yet) beside it off, in one run: what
// a search id, the pending-search window and its evictions cost. Callers
// are 100 addresses, so the window is full and evicting, as in steady
// traffic that never reports.
func BenchmarkQueryLearning(b *testing.B) {
	queries := evalQueries(b)
	store, callers := learningBench(b)
	for _, c := range []struct {
		name     string
		learning *Learning
	}{{"off", nil}, {"on", &Learning{Store: store}}} {
		svc := New(Config{Embedder: embedding.NewLocal(0), Version: "bench", Learning: c.learning})
		if _, err := svc.Build(b.Context(), defaultSetup(b)); err != nil {
			b.Fatal(err)
		}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := svc.Search(b.Context(), Request{Query: queries[i%len(queries)]}, callers[i%len(callers)]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// BenchmarkPendingWindowMemory fills the pending-search window (10,000
// searches from 100 addresses, none reported) and reports the heap it
// holds then, beside the same service before any search, per search
// held: what learning keeps for feedback.
func BenchmarkPendingWindowMemory(b *testing.B) {
	queries := evalQueries(b)
	store, callers := learningBench(b)
	heap := func() uint64 {
		var m runtime.MemStats
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	for b.Loop() {
		svc := New(Config{Embedder: embedding.NewLocal(0), Version: "bench", Learning: &Learning{Store: store}})
		if _, err := svc.Build(b.Context(), defaultSetup(b)); err != nil {
			b.Fatal(err)
		}
		before := heap()
		for i := range 2 * pendingSearches { // the window full, and turned over once
			if _, err := svc.Search(b.Context(), Request{Query: queries[i%len(queries)]}, callers[i%len(callers)]); err != nil {
				b.Fatal(err)
			}
		}
		after := heap()
		b.ReportMetric(float64(after-before)/pendingSearches, "B/search-held")
		b.ReportMetric(float64(after-before)/(1<<20), "MiB-held")
		runtime.KeepAlive(svc)
	}
}

// learningBench is what the learning benchmarks share: a file store, and
// 100 anonymous callers (each within its share of the pending window).
func learningBench(b *testing.B) (learn.Store, []access.Caller) {
	store, err := learn.Open(filepath.Join(b.TempDir(), "learned.db"), learn.Config{}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { store.Close() })
	callers := make([]access.Caller, 100)
	for i := range callers {
		callers[i] = access.Caller{Address: fmt.Sprintf("10.0.0.%d", i)}
	}
	return store, callers
}

func evalQueries(tb testing.TB) []string {
	tb.Helper()
	return queriesIn(tb, "../../evals/cases.jsonl")
}

// queriesIn are the queries of an eval cases file.
func queriesIn(tb testing.TB, path string) []string {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var c struct {
			Query string `json:"query"`
		}
		if json.Unmarshal(sc.Bytes(), &c) == nil && c.Query != "" {
			out = append(out, c.Query)
		}
	}
	if len(out) == 0 {
		tb.Fatalf("no queries in %s", path)
	}
	return out
}

// BenchmarkQueryScale is a whole hybrid search at catalog sizes past the
// default one: generated catalogs (package catgen) of 4,000, 10,000 and
// (with -bench 'QueryScale/.*100000') 100,000 tools, and seal-tools' 4,076
// when the shared evaluation data is beside the repository
// (TOOLSEARCH_EVALDATA, default ../shared/evaldata), with its own queries.
func BenchmarkQueryScale(b *testing.B) {
	type set struct {
		name    string
		setup   func(testing.TB) *Setup
		queries func(testing.TB) []string
	}
	sets := []set{{name: "seal-tools", setup: func(tb testing.TB) *Setup { return sharedSetup(tb, "seal-tools") },
		queries: func(tb testing.TB) []string { return sharedQueries(tb, "seal-tools") }}}
	for _, n := range []int{4000, 10000, 100000} {
		sets = append(sets, set{name: fmt.Sprintf("generated/N=%d", n), setup: func(tb testing.TB) *Setup { return synthetic(tb, n) },
			queries: func(tb testing.TB) []string { return evalQueries(tb) }})
	}
	for _, st := range sets {
		b.Run(st.name, func(b *testing.B) {
			if strings.Contains(st.name, "100000") && !strings.Contains(benchFilter(), "100000") {
				b.Skip("100,000 tools: run with -bench 'QueryScale/.*100000'")
			}
			setup, queries := st.setup(b), st.queries(b)
			svc := New(Config{Embedder: embedding.NewLocal(0), Version: "bench"})
			if _, err := svc.Build(b.Context(), setup); err != nil {
				b.Fatal(err)
			}
			// Explain asks each result's lexical rank among every lexical
			// match, which the plain query need not know.
			for _, explain := range []bool{false, true} {
				name := "plain"
				if explain {
					name = "explain"
				}
				b.Run(name, func(b *testing.B) {
					b.ReportAllocs()
					i := 0
					for b.Loop() {
						if _, err := svc.Search(b.Context(), Request{Query: queries[i%len(queries)], Explain: explain}, access.Caller{}); err != nil {
							b.Fatal(err)
						}
						i++
					}
				})
			}
		})
	}
}

// BenchmarkSearchCost is what a search costs against what it is charged
// (units: its request's one and those its scan pays, see UnitCost),
// over generated catalogs of 10,000 and (with -bench
// 'SearchCost/.*100000') 100,000 tools with the local embedder, exact and
// binary: a short query, broad ones of 100 and 500 distinct words, and
// one of 16 sentences, each an intent ranked apart.
// BENCHMARKS.md, "What a search costs", is its table.
func BenchmarkSearchCost(b *testing.B) {
	for _, n := range []int{10000, 100000} {
		for _, quant := range []string{index.QuantNone, index.QuantBinary} {
			name := fmt.Sprintf("N=%d/%s", n, quant)
			if n > 10000 && !strings.Contains(benchFilter(), "100000") {
				b.Run(name, func(b *testing.B) { b.Skip("100,000 tools: run with -bench 'SearchCost/.*100000'") })
				continue
			}
			svc := New(Config{Embedder: embedding.NewLocal(0), Version: "bench", Quantization: quant})
			setup := synthetic(b, n)
			if _, err := svc.Build(b.Context(), setup); err != nil {
				b.Fatal(err)
			}
			for _, q := range []struct{ name, text string }{
				{"short", "send the weekly report to the team"},
				{"100-words", broadQuery(setup.Catalog, 100)},
				{"500-words", broadQuery(setup.Catalog, 500)},
				{"16-intents", intentsQuery(setup.Catalog, 16)},
			} {
				for _, mode := range []Mode{ModeHybrid, ModeSemantic, ModeKeyword} {
					b.Run(fmt.Sprintf("%s/%s/%s", name, q.name, mode), func(b *testing.B) {
						paid := spent{}
						req := Request{Query: q.text, Mode: mode}
						if _, err := svc.Search(access.WithBudget(b.Context(), paid), req, access.Caller{}); err != nil {
							b.Fatal(err)
						}
						for b.Loop() {
							if _, err := svc.Search(b.Context(), req, access.Caller{}); err != nil {
								b.Fatal(err)
							}
						}
						b.ReportMetric(float64(1+paid[access.WorkScan]), "units")
					})
				}
			}
		}
	}
}

// evalData is where the shared evaluation sets are, if anywhere.
func evalData() string {
	if d := os.Getenv("TOOLSEARCH_EVALDATA"); d != "" {
		return d
	}
	return filepath.Join("..", "..", "..", "shared", "evaldata")
}

// sharedSetup is a shared set's catalog; the benchmark skips without it.
func sharedSetup(tb testing.TB, name string) *Setup {
	tb.Helper()
	path := filepath.Join(evalData(), name, "catalog.json")
	if _, err := os.Stat(path); err != nil {
		tb.Skipf("%s: no shared evaluation data (%v)", name, err)
	}
	parts, err := catalog.ReadParts([]string{path}, "")
	if err != nil {
		tb.Fatal(err)
	}
	cat, err := catalog.New(parts)
	if err != nil {
		tb.Fatal(err)
	}
	return &Setup{Catalog: cat}
}

// sharedQueries are a shared set's queries.
func sharedQueries(tb testing.TB, name string) []string {
	tb.Helper()
	return queriesIn(tb, filepath.Join(evalData(), name, "cases.jsonl"))
}

// BenchmarkUnknownWords is a whole search of a query of MaxQueryBytes of
// words no tool has and no dictionary knows, new words each time, over
// the default catalog: what a caller who sends nonsense makes a search
// cost, misspellings looked up (bm25.MaxCorrections of them) included.
func BenchmarkUnknownWords(b *testing.B) {
	svc := newService(b, nil)
	if _, err := svc.Rebuild(b.Context()); err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{8, 24} {
		b.Run(fmt.Sprintf("letters=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			q := make([]byte, 0, MaxQueryBytes)
			for b.Loop() {
				q = q[:0]
				for len(q)+n < MaxQueryBytes {
					for range n {
						q = append(q, byte('a'+r.IntN(26)))
					}
					q = append(q, ' ')
				}
				if _, err := svc.Search(b.Context(), Request{Query: string(q)}, access.Caller{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkQueryCold is BenchmarkQuery with the caches cold: before each
// search a walk writes a line in every 64 bytes of a buffer larger than
// the core's L2 (2 MiB here, where a core has 1 MiB), as a server's
// network stack, its other requests and its client do between one
// caller's searches. The walk alone is the baseline of the same run: a
// search cold costs its ns/op less the walk's. Served over HTTP, a
// search costs more than BenchmarkQuery says, and about what it costs
// here (BENCHMARKS.md, HTTP load).
func BenchmarkQueryCold(b *testing.B) {
	queries := evalQueries(b)
	svc := New(Config{Embedder: embedding.NewLocal(0), Version: "bench"})
	if _, err := svc.Build(b.Context(), defaultSetup(b)); err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 2<<20)
	walk := func() {
		for i := 0; i < len(buf); i += 64 {
			buf[i]++
		}
	}
	b.Run("walk", func(b *testing.B) {
		for b.Loop() {
			walk()
		}
	})
	for _, mode := range []Mode{ModeHybrid, ModeSemantic, ModeKeyword} {
		b.Run("walk+"+string(mode), func(b *testing.B) {
			i := 0
			for b.Loop() {
				walk()
				if _, err := svc.Search(b.Context(), Request{Query: queries[i%len(queries)], Mode: mode}, access.Caller{}); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}
