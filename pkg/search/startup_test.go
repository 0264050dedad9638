package search

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolsearch/toolsearch/pkg/catalog"
	"github.com/toolsearch/toolsearch/pkg/catgen"
	"github.com/toolsearch/toolsearch/pkg/embedding"
)

// synthetic is a generated catalog of n tools (package catgen: thousands
// of servers, varied text, a vocabulary that grows with n).
func synthetic(tb testing.TB, n int) *Setup {
	return generated(tb, catgen.Spec{Tools: n, Seed: 1})
}

// generated is the catalog sp writes.
func generated(tb testing.TB, sp catgen.Spec) *Setup {
	tb.Helper()
	var buf bytes.Buffer
	if err := sp.Write(&buf); err != nil {
		tb.Fatal(err)
	}
	return parsed(tb, buf.Bytes())
}

// parsed is the catalog file data.
func parsed(tb testing.TB, data []byte) *Setup {
	tb.Helper()
	part, err := catalog.Parse("synthetic", data, "")
	if err != nil {
		tb.Fatal(err)
	}
	cat, err := catalog.New([]catalog.Part{part})
	if err != nil {
		tb.Fatal(err)
	}
	return &Setup{Catalog: cat}
}

// BenchmarkStartup is the time from a loaded catalog to a published
// index with the local embedder, and (parse) from the catalog's bytes.
// The sizes are those of make load and BENCHMARKS.md; 100,000 runs with
// -bench 'Startup/.*100000'. The 10,000 tools are built again with their
// descriptions in Cyrillic letters: text that is not ASCII is read by
// other code than English is, and a regression there shows in no ASCII
// catalog (BENCHMARKS.md, BenchmarkWords).
func BenchmarkStartup(b *testing.B) {
	build := func(b *testing.B, setup *Setup) {
		for b.Loop() {
			svc := New(Config{Embedder: embedding.NewLocal(0)})
			if _, err := svc.Build(b.Context(), setup); err != nil {
				b.Fatal(err)
			}
		}
	}
	for _, n := range []int{73, 4000, 10000, 100000} {
		b.Run(fmt.Sprintf("local/N=%d", n), func(b *testing.B) {
			if n > 10000 && !strings.Contains(benchFilter(), "100000") {
				b.Skip("100,000 tools: run with -bench 'Startup/.*100000'")
			}
			build(b, synthetic(b, n))
		})
	}
	b.Run("local/N=10000/cyrillic", func(b *testing.B) {
		build(b, generated(b, catgen.Spec{Tools: 10000, Seed: 1, Script: "cyrillic"}))
	})
	b.Run("local/N=10000/as-filed", func(b *testing.B) {
		build(b, asFiled(b, 10000))
	})
}

// asFiled is the catalog BenchmarkStartup built when issue 29 was filed
// (1a3e381, before catgen): that commit's own benchmark builds the same
// tools, so the two in one run give the build goal as a ratio
// against the code it was measured on (BENCHMARKS.md).
func asFiled(tb testing.TB, n int) *Setup {
	tb.Helper()
	verbs := []string{"list", "create", "delete", "update", "search", "get", "send", "export", "import", "sync"}
	nouns := []string{"issue", "file", "message", "event", "ticket", "table", "report", "user", "invoice", "job", "image", "order"}
	r := rand.New(rand.NewPCG(uint64(n), 7))
	type tool struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"inputSchema"`
	}
	type server struct {
		Name  string `json:"name"`
		Tools []tool `json:"tools"`
	}
	var servers []server
	for s := 0; s*50 < n; s++ {
		srv := server{Name: fmt.Sprintf("server%03d", s)}
		for i := s * 50; i < min(n, (s+1)*50); i++ {
			v, o := verbs[r.IntN(len(verbs))], nouns[r.IntN(len(nouns))]
			srv.Tools = append(srv.Tools, tool{Name: fmt.Sprintf("%s_%s_%d", v, o, i),
				Description: fmt.Sprintf("%s a %s in the %s system, by id %d, with filters for %s and %s.", strings.ToUpper(v[:1])+v[1:], o, srv.Name, i, nouns[r.IntN(len(nouns))], verbs[r.IntN(len(verbs))]),
				InputSchema: json.RawMessage(`{"type":"object","properties":{"id":{"type":"string","description":"The id."}}}`)})
		}
		servers = append(servers, srv)
	}
	data, err := json.Marshal(map[string]any{"servers": servers})
	if err != nil {
		tb.Fatal(err)
	}
	return parsed(tb, data)
}

// benchFilter is the -test.bench pattern.
func benchFilter() string {
	if f := flag.Lookup("test.bench"); f != nil {
		return f.Value.String()
	}
	return ""
}

// slowProvider answers embeddings after latency and records the largest
// batch and the most requests in flight at once.
type slowProvider struct {
	latency         time.Duration
	inflight, maxIn atomic.Int32
	calls, maxBatch atomic.Int32
}

func (p *slowProvider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := p.inflight.Add(1)
	defer p.inflight.Add(-1)
	for m := p.maxIn.Load(); n > m && !p.maxIn.CompareAndSwap(m, n); m = p.maxIn.Load() {
	}
	p.calls.Add(1)
	var req struct {
		Input []string `json:"input"`
	}
	json.NewDecoder(r.Body).Decode(&req)
	for m := p.maxBatch.Load(); int32(len(req.Input)) > m && !p.maxBatch.CompareAndSwap(m, int32(len(req.Input))); m = p.maxBatch.Load() {
	}
	time.Sleep(p.latency)
	type item struct {
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	}
	data := make([]item, len(req.Input))
	for i := range data {
		data[i] = item{i, []float32{1, float32(i%7 + 1), 0.5, float32(len(req.Input[i]) % 5)}}
	}
	json.NewEncoder(w).Encode(map[string]any{"data": data})
}

// TestStartupBatches builds 62 and 10,000 tools against a provider with
// 200ms latency: one request for 62; for 10,000, five batches of at most
// 2048 inputs with at most four in flight, so about two latencies, not
// five. The times are logged for BENCHMARKS.md, not asserted.
func TestStartupBatches(t *testing.T) {
	if testing.Short() {
		t.Skip("sleeps for the provider's latency")
	}
	for _, n := range []int{62, 10000} {
		p := &slowProvider{latency: 200 * time.Millisecond}
		srv := httptest.NewServer(p)
		emb := embedding.NewOpenAI(embedding.OpenAIConfig{BaseURL: srv.URL + "/v1", Model: "fake"})
		svc := New(Config{Embedder: emb})
		setup := synthetic(t, n)
		start := time.Now()
		if _, err := svc.Build(t.Context(), setup); err != nil {
			t.Fatal(err)
		}
		took := time.Since(start)
		srv.Close()
		batches := (n + embedding.DefaultBatchSize - 1) / embedding.DefaultBatchSize
		t.Logf("openai, 200ms per request, N=%d: ready in %s; %d requests, largest batch %d, at most %d in flight (ceil(%d batches / %d) x 200ms = %s)",
			n, took.Round(time.Millisecond), p.calls.Load(), p.maxBatch.Load(), p.maxIn.Load(), batches, embedding.DefaultConcurrency,
			time.Duration((batches+embedding.DefaultConcurrency-1)/embedding.DefaultConcurrency)*200*time.Millisecond)
		if int(p.calls.Load()) != batches || p.maxBatch.Load() > embedding.DefaultBatchSize || p.maxIn.Load() > embedding.DefaultConcurrency {
			t.Errorf("N=%d: %d requests (want %d), largest batch %d, %d in flight", n, p.calls.Load(), batches, p.maxBatch.Load(), p.maxIn.Load())
		}
	}
}
