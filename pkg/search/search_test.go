package search

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolsearch/toolsearch/pkg/access"
	"github.com/toolsearch/toolsearch/pkg/config"

	"github.com/google/go-cmp/cmp"

	"github.com/toolsearch/toolsearch/pkg/catalog"
	"github.com/toolsearch/toolsearch/pkg/embedding"
	"github.com/toolsearch/toolsearch/pkg/index"
	"github.com/toolsearch/toolsearch/pkg/logbuf"
)

var _ Embedder = (*scriptedEmbedder)(nil)

// scriptedEmbedder wraps the local embedder and fails, or stalls, when told.
type scriptedEmbedder struct {
	local *embedding.Local
	fail  atomic.Pointer[error]
	stall atomic.Bool // block until the context is done
	calls atomic.Int32
}

func (s *scriptedEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	s.calls.Add(1)
	if s.stall.Load() {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if err := s.fail.Load(); err != nil {
		return nil, *err
	}
	return s.local.Embed(ctx, texts)
}

func (s *scriptedEmbedder) Info() embedding.Info {
	return embedding.Info{Provider: "scripted", Model: "m"}
}

func (s *scriptedEmbedder) failWith(err error) {
	if err == nil {
		s.fail.Store(nil)
		return
	}
	s.fail.Store(&err)
}

// waitFor polls cond until it holds, for at most 15 seconds.
func waitFor(tb testing.TB, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatal("condition never held")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// defaultSetup is the default catalog with a core whitelist and templates
// like the embedded default config's.
func defaultSetup(tb testing.TB) *Setup {
	tb.Helper()
	cat, err := catalog.Default()
	if err != nil {
		tb.Fatal(err)
	}
	return &Setup{
		Catalog: cat,
		Core:    []string{"get_platform_info", "platform/get_usage"},
		Templates: map[string]config.Template{
			"release": {Description: "Ship it", Tools: []string{"github/list_workflow_runs", "merge_pull_request", "create_release", "slack/post_message"}},
			"triage":  {Description: "Sort tickets", Tools: []string{"jira/search_tickets", "jira/assign_ticket"}},
		},
	}
}

func newService(tb testing.TB, e Embedder) *Service {
	tb.Helper()
	if e == nil {
		e = embedding.NewLocal(256)
	}
	return New(Config{Embedder: e, Version: "test", QueryTimeout: time.Second,
		Load: func(context.Context) (*Setup, error) { return defaultSetup(tb), nil }})
}

func mustBuild(tb testing.TB, svc *Service) *Snapshot {
	tb.Helper()
	snap, err := svc.Build(tb.Context(), defaultSetup(tb))
	if err != nil {
		tb.Fatal(err)
	}
	return snap
}

func mustSearch(tb testing.TB, svc *Service, req Request) *Response {
	tb.Helper()
	res, err := svc.Search(tb.Context(), req, access.Caller{})
	if err != nil {
		tb.Fatalf("Search(%+v): %v", req, err)
	}
	return res
}

func ids(hits []Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.Server + "/" + h.Name
	}
	return out
}

func ptr[T any](v T) *T { return &v }

func TestSearchBeforeBuild(t *testing.T) {
	svc := newService(t, nil)
	if _, err := svc.Search(t.Context(), Request{Query: "x"}, access.Caller{}); !errors.Is(err, ErrNotReady) {
		t.Errorf("Search before Build: error = %v, want ErrNotReady", err)
	}
	if st := svc.Status(); st.Ready || st.Size != 0 || st.BuiltAt != nil || st.Mode != "none" {
		t.Errorf("Status before Build = %+v, want not ready and empty", st)
	}
}

func TestBuildAndSearch(t *testing.T) {
	svc := New(Config{Embedder: embedding.NewLocal(0), Version: "test"})
	snap := mustBuild(t, svc)
	st := svc.Status()
	n := snap.Catalog.Len()
	// The local embedder's index keeps its vectors by row and by column.
	if !st.Ready || st.Size != n || st.MemoryBytes != int64(2*n*embedding.DefaultLocalDimensions*4) || st.Mode != "semantic" || st.Degraded {
		t.Errorf("Status = %+v, want ready, semantic, size %d, memory 2*4*N*D", st, n)
	}
	if len(st.Core) != 2 || len(st.Templates) != 2 || st.Templates[0].Name != "release" {
		t.Errorf("Status core %v templates %v", st.Core, st.Templates)
	}
	tests := []struct {
		query string
		want  string
	}{
		{"open a pull request", "github/create_pull_request"},
		{"reply in a slack thread", "slack/post_message"},
		{"least squares curve fit", "compute/fit_curve"},
	}
	for _, tt := range tests {
		res := mustSearch(t, svc, Request{Query: tt.query, TopK: ptr(3), IncludeCore: ptr(false)})
		if got := ids(res.Tools); len(got) != 3 || got[0] != tt.want {
			t.Errorf("Search(%q) = %v, want %s first of 3", tt.query, got, tt.want)
		}
		if res.Mode != "hybrid" || res.Degraded || res.IndexVersion != st.IndexVersion || res.Tools[0].Source != "hybrid" || res.Tools[0].Score == nil {
			t.Errorf("Search(%q): mode %q degraded %v version %q source %q", tt.query, res.Mode, res.Degraded, res.IndexVersion, res.Tools[0].Source)
		}
	}
	// A query of stop words only carries no evidence: no tools, not 10 arbitrary ones.
	if res := mustSearch(t, svc, Request{Query: "what can you do for me", IncludeCore: ptr(false)}); len(res.Tools) != 0 {
		t.Errorf("stop-word query returned %v", ids(res.Tools))
	}
}

// The classic failure this service is built against: the provider is down
// at start-up. The endpoint must come up in keyword mode, say so, and
// return to semantic mode by itself.
func TestStartupDegradedThenRecovers(t *testing.T) {
	emb := &scriptedEmbedder{local: embedding.NewLocal(64)}
	emb.failWith(errors.New("connection refused"))
	svc := New(Config{Embedder: emb, RetryDelay: 20 * time.Millisecond})
	done := make(chan error, 1)
	go func() { done <- svc.Run(t.Context(), defaultSetup(t)) }()
	waitFor(t, func() bool { return svc.Status().NextRetryAt != nil })

	st := svc.Status()
	if !st.Ready || st.Mode != "keyword" || !st.Degraded || !strings.Contains(st.LastError, "connection refused") || st.MemoryBytes != 0 {
		t.Errorf("Status while the provider is down = %+v", st)
	}
	res := mustSearch(t, svc, Request{Query: "merge pull request", IncludeCore: ptr(false)})
	if res.Mode != "keyword" || !res.Degraded || res.Diagnostic == nil || res.Diagnostic.EmbeddingReason != "no_index" || strings.Contains(res.Diagnostic.EmbeddingError, "connection refused") {
		t.Errorf("search while down: mode %q degraded %v diagnostic %+v", res.Mode, res.Degraded, res.Diagnostic)
	}
	if len(res.Tools) == 0 || ids(res.Tools)[0] != "github/merge_pull_request" || res.Tools[0].Source != "keyword" {
		t.Errorf("keyword answer = %v", ids(res.Tools))
	}
	calls := emb.calls.Load()
	mustSearch(t, svc, Request{Query: "anything at all"})
	if emb.calls.Load() != calls {
		t.Error("a keyword-only snapshot still called the provider for a query")
	}

	emb.failWith(nil)
	if err := <-done; err != nil {
		t.Fatalf("Run = %v", err)
	}
	st = svc.Status()
	if st.Mode != "semantic" || st.Degraded || st.NextRetryAt != nil {
		t.Errorf("Status after recovery = mode %q degraded %v next_retry %v", st.Mode, st.Degraded, st.NextRetryAt)
	}
	if res := mustSearch(t, svc, Request{Query: "merge pull request"}); res.Mode != "hybrid" || res.Degraded {
		t.Errorf("after recovery: mode %q degraded %v", res.Mode, res.Degraded)
	}
}

// TestStartupLoadFailsThenRecovers: while the catalog cannot be loaded
// (an upstream-only catalog whose upstream is down has no tools), status
// and the log say why, once an attempt, not "no catalog" over it, and
// the first load that succeeds is built.
func TestStartupLoadFailsThenRecovers(t *testing.T) {
	var failing atomic.Bool
	failing.Store(true)
	var attempts atomic.Int32
	load := func(context.Context) (*Setup, error) {
		attempts.Add(1)
		if failing.Load() {
			return nil, errors.New("catalog: no tools")
		}
		return defaultSetup(t), nil
	}
	var log logbuf.Buffer
	svc := New(Config{Embedder: embedding.NewLocal(64), Load: load, RetryDelay: 20 * time.Millisecond,
		Logger: slog.New(slog.NewJSONHandler(&log, nil))})
	done := make(chan error, 1)
	go func() { done <- svc.Run(t.Context(), nil) }()
	waitFor(t, func() bool { return attempts.Load() >= 3 && svc.Status().NextRetryAt != nil })
	if st := svc.Status(); st.Ready || st.LastError != "catalog: no tools" {
		t.Errorf("status while the catalog fails to load: ready %v, last error %q; want the load's error", st.Ready, st.LastError)
	}
	failing.Store(false)
	if err := <-done; err != nil {
		t.Fatalf("Run = %v", err)
	}
	if st := svc.Status(); !st.Ready || st.Mode != "semantic" {
		t.Errorf("after the catalog loads: ready %v mode %q", st.Ready, st.Mode)
	}
	failed, noCatalog := strings.Count(log.String(), `"index build failed"`), strings.Count(log.String(), "no catalog")
	if n := int(attempts.Load()) - 1; failed != n || noCatalog != 0 {
		t.Errorf("%d failed loads logged %d failures, %d of them \"no catalog\"; want one each, naming the cause", n, failed, noCatalog)
	}
}

func TestQueryFallback(t *testing.T) {
	emb := &scriptedEmbedder{local: embedding.NewLocal(64)}
	svc := New(Config{Embedder: emb, QueryTimeout: 50 * time.Millisecond})
	mustBuild(t, svc)
	// The caller reads the reason and a fixed sentence; the provider's
	// own words are the operator's, in status.
	tests := []struct {
		name       string
		set        func()
		wantReason string
		wantMsg    string
	}{
		{"provider error", func() { emb.failWith(errors.New("503 overloaded")) }, "other", "503 overloaded"},
		{"timeout", func() { emb.failWith(nil); emb.stall.Store(true) }, "timeout", "longer than 50ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.set()
			res := mustSearch(t, svc, Request{Query: "list open issues", IncludeCore: ptr(false)})
			if res.Mode != "keyword" || !res.Degraded || res.Diagnostic == nil || res.Diagnostic.EmbeddingReason != tt.wantReason ||
				res.Diagnostic.EmbeddingError == "" || strings.Contains(res.Diagnostic.EmbeddingError, tt.wantMsg) {
				t.Errorf("mode %q degraded %v diagnostic %+v; want keyword, degraded, reason %q, not the provider's text", res.Mode, res.Degraded, res.Diagnostic, tt.wantReason)
			}
			if st := svc.Status(); !strings.Contains(st.LastQueryError, tt.wantMsg) {
				t.Errorf("status last_query_error %q, want the provider's text %q", st.LastQueryError, tt.wantMsg)
			}
			if len(res.Tools) == 0 {
				t.Error("no tools in the fallback answer")
			}
			if st := svc.Status(); st.Mode != "semantic" || st.Degraded {
				t.Errorf("one failed query degraded the whole service: %+v", st)
			}
		})
	}
	emb.stall.Store(false)
	if res := mustSearch(t, svc, Request{Query: "list open issues"}); res.Mode != "hybrid" {
		t.Errorf("after the fault cleared: mode %q", res.Mode)
	}
	// Keyword ranking on request is not a degradation.
	if res := mustSearch(t, svc, Request{Query: "list open issues", Mode: "keyword"}); res.Mode != "keyword" || res.Degraded {
		t.Errorf("mode=keyword: mode %q degraded %v", res.Mode, res.Degraded)
	}
}

func TestFailedRebuildKeepsServing(t *testing.T) {
	emb := &scriptedEmbedder{local: embedding.NewLocal(64)}
	svc := New(Config{Embedder: emb})
	first := mustBuild(t, svc)

	emb.failWith(errors.New("provider said no"))
	// An edited catalog needs the provider (an unchanged one is all cached).
	if _, err := svc.Build(t.Context(), editedSetup(t, defaultSetup(t))); !errors.Is(err, ErrEmbedFailed) {
		t.Fatalf("Build with failing embedder: error = %v, want ErrEmbedFailed", err)
	}
	if svc.Current() != first {
		t.Error("a failed build replaced the semantic snapshot")
	}
	st := svc.Status()
	if !st.Ready || st.Mode != "semantic" || !strings.Contains(st.LastError, "provider said no") || st.LastErrorAt == nil {
		t.Errorf("Status after failed rebuild = %+v", st)
	}

	emb.failWith(nil)
	bad := defaultSetup(t)
	bad.Core = append(bad.Core, "no_such_tool")
	bad.Templates["release"] = config.Template{Tools: []string{"create_issue", "ghost"}}
	_, err := svc.Build(t.Context(), bad)
	if err == nil || !strings.Contains(err.Error(), `core: unknown tool "no_such_tool"`) || !strings.Contains(err.Error(), `templates.release: unknown tool "ghost"`) {
		t.Errorf("Build with unknown names: %v", err)
	}
	if svc.Current() != first {
		t.Error("a bad setup replaced the snapshot")
	}
}

func TestRebuildLoadError(t *testing.T) {
	svc := New(Config{Embedder: embedding.NewLocal(0), Load: func(context.Context) (*Setup, error) {
		_, err := catalog.ReadParts([]string{"/nonexistent/tools.json"}, "")
		return nil, err
	}})
	mustBuild(t, svc)
	if _, err := svc.Rebuild(t.Context()); err == nil {
		t.Fatal("Rebuild with a missing catalog succeeded")
	}
	if st := svc.Status(); !st.Ready || !strings.Contains(st.LastError, "/nonexistent/tools.json") {
		t.Errorf("status = ready %v, last_error %q; want still ready, naming the file", st.Ready, st.LastError)
	}
}

func TestStatusHasNoSecrets(t *testing.T) {
	emb := embedding.NewOpenAI(embedding.OpenAIConfig{BaseURL: "http://user:hunter2@127.0.0.1:1/v1", APIKey: "sk-supersecretkey", MaxRetries: -1})
	svc := New(Config{Embedder: emb})
	snap := mustBuild(t, svc) // degraded: nothing listens on port 1
	if snap.Semantic() {
		t.Fatal("built a semantic index against a closed port")
	}
	b, _ := json.Marshal(svc.Status())
	res := mustSearch(t, svc, Request{Query: "x y"})
	r, _ := json.Marshal(res)
	for _, secret := range []string{"hunter2", "supersecret"} {
		if strings.Contains(string(b), secret) || strings.Contains(string(r), secret) {
			t.Errorf("status or response leaks %q: %s / %s", secret, b, r)
		}
	}
}

// TestSearchDuringRebuild runs searches while snapshots are swapped: every
// answer must come whole from one published snapshot.
func TestSearchDuringRebuild(t *testing.T) {
	// Exact, and binary with a shallow rescore so that semantic ranking's
	// first pass and rescoring run (hybrid ranking scores so few rows
	// exactly: rank's TestBinaryHybrid has its lazily scored candidates).
	for _, quant := range []string{index.QuantNone, index.QuantBinary} {
		t.Run(quant, func(t *testing.T) {
			svc := New(Config{Embedder: embedding.NewLocal(128), Version: "test", QueryTimeout: time.Second, Quantization: quant, Rescore: 10,
				Load: func(context.Context) (*Setup, error) { return defaultSetup(t), nil }})
			searchDuringRebuild(t, svc)
		})
	}
}

func searchDuringRebuild(t *testing.T, svc *Service) {
	first := mustBuild(t, svc)
	var mu sync.Mutex
	built := map[string]bool{first.Version: true}
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	var answered atomic.Int64
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; ctx.Err() == nil; i++ {
				mode := []Mode{ModeHybrid, ModeSemantic, ModeKeyword}[i%3]
				res, err := svc.Search(ctx, Request{Query: "list open issues", Mode: mode, Explain: i%2 == 0, IncludeCore: ptr(true)}, access.Caller{})
				if err != nil {
					if ctx.Err() == nil {
						errs <- err
					}
					return
				}
				if len(res.Tools) == 0 || res.Mode != mode || res.Degraded {
					errs <- fmt.Errorf("empty, degraded or %q instead of %q answer during rebuild", res.Mode, mode)
					return
				}
				mu.Lock()
				ok := built[res.IndexVersion]
				mu.Unlock()
				if !ok {
					// Published versions are recorded right after Rebuild returns;
					// allow that instant by re-checking once it has.
					waitFor(t, func() bool { mu.Lock(); defer mu.Unlock(); return built[res.IndexVersion] })
				}
				answered.Add(1)
			}
		}()
	}
	for range 5 {
		snap, err := svc.Rebuild(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		built[snap.Version] = true
		mu.Unlock()
	}
	cancel()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if answered.Load() == 0 {
		t.Error("no search answered during the rebuilds")
	}
}

// editedSetup is setup with its first tool's description changed and a
// tool "platform/brand_new" added.
func editedSetup(tb testing.TB, setup *Setup) *Setup {
	tb.Helper()
	tools := slices.Clone(setup.Catalog.Tools())
	tools[0].Description += " Now with more detail."
	tools = append(tools, catalog.Tool{Server: "platform", Name: "brand_new", Description: "A new tool."})
	return withTools(tb, setup, tools)
}

// withTools is setup with a catalog of tools, grouped by server in the
// order their servers first appear.
func withTools(tb testing.TB, setup *Setup, tools []catalog.Tool) *Setup {
	tb.Helper()
	byServer := map[string][]catalog.Tool{}
	var order []string
	for _, tl := range tools {
		if byServer[tl.Server] == nil {
			order = append(order, tl.Server)
		}
		byServer[tl.Server] = append(byServer[tl.Server], tl)
	}
	var servers []catalog.Server
	for _, name := range order {
		servers = append(servers, catalog.Server{Name: name, Tools: byServer[name]})
	}
	cat, err := catalog.New([]catalog.Part{{Source: "edited", Servers: servers}})
	if err != nil {
		tb.Fatal(err)
	}
	edited := *setup
	edited.Catalog = cat
	return &edited
}

// countingEmbedder is a non-local embedder (so the cache applies) that
// records how many texts it was asked to embed.
type countingEmbedder struct {
	local *embedding.Local
	texts atomic.Int64
}

func (c *countingEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	c.texts.Add(int64(len(texts)))
	return c.local.Embed(ctx, texts)
}

func (c *countingEmbedder) Info() embedding.Info {
	return embedding.Info{Provider: "counting", Model: "m", Dimensions: c.local.Info().Dimensions}
}

func TestEmbeddingCache(t *testing.T) {
	emb := &countingEmbedder{local: embedding.NewLocal(64)}
	svc := New(Config{Embedder: emb})
	setup := defaultSetup(t)
	snap, err := svc.Build(t.Context(), setup)
	if err != nil {
		t.Fatal(err)
	}
	n := int64(snap.Catalog.Len())
	if got := emb.texts.Load(); got != n || snap.Embedded != int(n) {
		t.Fatalf("first build embedded %d texts (snapshot says %d), want %d", got, snap.Embedded, n)
	}
	if snap, _ = svc.Build(t.Context(), setup); emb.texts.Load() != n || snap.Embedded != 0 {
		t.Errorf("an unchanged rebuild embedded %d more texts", emb.texts.Load()-n)
	}
	// One tool's description changes, one tool is added: two texts to embed.
	if snap, err = svc.Build(t.Context(), editedSetup(t, setup)); err != nil {
		t.Fatal(err)
	}
	if got := emb.texts.Load() - n; got != 2 || snap.Embedded != 2 {
		t.Errorf("after one edit and one addition, embedded %d texts (snapshot says %d), want 2", got, snap.Embedded)
	}
	if res := mustSearch(t, svc, Request{Query: "select:brand_new"}); len(res.Tools) != 1 {
		t.Errorf("the new tool is not searchable: %v", ids(res.Tools))
	}
}

// slowEmbedder is a remote-like embedder that takes a moment per call and
// counts calls.
type slowEmbedder struct {
	local *embedding.Local
	calls atomic.Int32
	delay time.Duration
}

func (e *slowEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	e.calls.Add(1)
	select {
	case <-time.After(e.delay):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return e.local.Embed(ctx, texts)
}

func (e *slowEmbedder) Info() embedding.Info { return embedding.Info{Provider: "slow", Model: "m"} }

func TestQueryCache(t *testing.T) {
	emb := &slowEmbedder{local: embedding.NewLocal(64)}
	svc := New(Config{Embedder: emb})
	mustBuild(t, svc)
	built := emb.calls.Load()
	mustSearch(t, svc, Request{Query: "merge a pull request"})
	mustSearch(t, svc, Request{Query: "merge a pull request"})
	if got := emb.calls.Load() - built; got != 1 {
		t.Errorf("a repeated query made %d provider calls, want 1", got)
	}
	emb.delay = 100 * time.Millisecond
	before := emb.calls.Load()
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if res := mustSearch(t, svc, Request{Query: "list open issues"}); res.Mode != "hybrid" {
				t.Errorf("mode %q", res.Mode)
			}
		}()
	}
	wg.Wait()
	if got := emb.calls.Load() - before; got != 1 {
		t.Errorf("20 concurrent identical queries made %d provider calls, want 1", got)
	}
	// Off: every query asks the provider.
	off := New(Config{Embedder: emb, QueryCacheSize: -1})
	mustBuild(t, off)
	before = emb.calls.Load()
	mustSearch(t, off, Request{Query: "list open issues"})
	mustSearch(t, off, Request{Query: "list open issues"})
	if got := emb.calls.Load() - before; got != 2 {
		t.Errorf("with the cache off: %d calls, want 2", got)
	}
}

// scalingEmbedder embeds like the local embedder but scales the vectors
// of the texts match picks: to zero, as a remote model may answer for a
// query it finds empty, or to values near float32's smallest.
type scalingEmbedder struct {
	local *embedding.Local
	match func(text string) bool
	scale float32
}

func (z *scalingEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	vecs, err := z.local.Embed(ctx, texts)
	for i, t := range texts {
		if err == nil && z.match(t) {
			for j := range vecs[i] {
				vecs[i][j] *= z.scale
			}
		}
	}
	return vecs, err
}

func (z *scalingEmbedder) Info() embedding.Info {
	return embedding.Info{Provider: "scaling", Model: "m"}
}

// TestZeroQueryVectorAfterOthers: a query without dense evidence ranks by
// BM25 alone, whatever queries ran before it (their scores must not leak
// through pooled scratch).
func TestZeroQueryVectorAfterOthers(t *testing.T) {
	const q = "post a message to the team channel"
	answer := func(warm bool) []Hit {
		svc := New(Config{Embedder: &scalingEmbedder{local: embedding.NewLocal(256), match: func(t string) bool { return t == q }}, QueryCacheSize: -1})
		if _, err := svc.Build(t.Context(), defaultSetup(t)); err != nil {
			t.Fatal(err)
		}
		if warm {
			for _, w := range []string{"create a github issue", "read a file from the repository", "schedule a meeting"} {
				mustSearch(t, svc, Request{Query: w})
			}
		}
		return mustSearch(t, svc, Request{Query: q}).Tools
	}
	if diff := cmp.Diff(answer(false), answer(true)); diff != "" {
		t.Errorf("answer changed after other queries (-cold +warm):\n%s", diff)
	}
}

// TestBinaryQuantization: a binary index that rescores every tool answers
// exactly as the float32 index does, in every mode; status says which one
// is serving.
func TestBinaryQuantization(t *testing.T) {
	queries := evalQueries(t)
	build := func(cfg Config) *Service {
		cfg.Embedder = embedding.NewLocal(0)
		svc := New(cfg)
		if _, err := svc.Build(t.Context(), defaultSetup(t)); err != nil {
			t.Fatal(err)
		}
		return svc
	}
	exact := build(Config{})
	binary := build(Config{Quantization: index.QuantBinary, Rescore: 1000})
	if st := binary.Status(); st.Quantization != index.QuantBinary || st.Rescore != 1000 {
		t.Errorf("binary status: quantization %q, rescore %d", st.Quantization, st.Rescore)
	}
	if st := exact.Status(); st.Quantization != index.QuantNone || st.Rescore != 0 {
		t.Errorf("exact status: quantization %q, rescore %d", st.Quantization, st.Rescore)
	}
	if b, e := binary.Status().MemoryBytes, exact.Status().MemoryBytes; b <= e {
		t.Errorf("binary index holds %d bytes, exact %d: codes not counted", b, e)
	}
	for _, mode := range []Mode{ModeHybrid, ModeSemantic} {
		for _, q := range queries {
			req := Request{Query: q, Mode: mode, Explain: true}
			want, got := mustSearch(t, exact, req), mustSearch(t, binary, req)
			if diff := cmp.Diff(want.Tools, got.Tools); diff != "" {
				t.Fatalf("%s %q: binary (rescoring all) differs from exact (-exact +binary):\n%s", mode, q, diff)
			}
		}
	}
}

// TestBinaryKeptByColumnIsExact: the local embedder's index of 10,000
// tools is kept by column, where binary codes would be slower than exact
// scores; configured binary, it serves exactly as the exact one does, and
// status says so and why.
func TestBinaryKeptByColumnIsExact(t *testing.T) {
	setup := synthetic(t, 10_000)
	build := func(cfg Config) *Service {
		cfg.Embedder = embedding.NewLocal(0)
		svc := New(cfg)
		if _, err := svc.Build(t.Context(), setup); err != nil {
			t.Fatal(err)
		}
		return svc
	}
	exact, binary := build(Config{}), build(Config{Quantization: index.QuantBinary})
	st := binary.Status()
	if st.Quantization != index.QuantNone || st.Rescore != 0 || st.QuantizationNote == "" {
		t.Errorf("binary configured, kept by column: status quantization %q, rescore %d, note %q", st.Quantization, st.Rescore, st.QuantizationNote)
	}
	if e := exact.Status(); e.QuantizationNote != "" || st.MemoryBytes != e.MemoryBytes {
		t.Errorf("exact: note %q, %d bytes; binary configured: %d bytes", e.QuantizationNote, e.MemoryBytes, st.MemoryBytes)
	}
	for _, mode := range []Mode{ModeHybrid, ModeSemantic} {
		for _, q := range []string{"send the weekly report to the team", "create a calendar event", "search files by name"} {
			req := Request{Query: q, Mode: mode, Explain: true}
			if diff := cmp.Diff(mustSearch(t, exact, req).Tools, mustSearch(t, binary, req).Tools); diff != "" {
				t.Errorf("%s %q: binary configured differs from exact (-exact +binary):\n%s", mode, q, diff)
			}
		}
	}
}

// TestConcurrentSearchesAnswerAsAlone: searches share pooled working
// memory (work) and scratch; searches running at once, in every mode,
// explained or not, answer exactly as each does alone. Run under -race.
func TestConcurrentSearchesAnswerAsAlone(t *testing.T) {
	svc := New(Config{Embedder: embedding.NewLocal(0), Version: "test"})
	mustBuild(t, svc)
	queries := evalQueries(t)[:24]
	var reqs []Request
	for i, q := range queries {
		for _, mode := range []Mode{ModeHybrid, ModeSemantic, ModeKeyword} {
			k := 3 + i%20
			reqs = append(reqs, Request{Query: q, Mode: mode, TopK: &k, Explain: i%2 == 0})
		}
	}
	answer := func(req Request) string {
		res, err := svc.Search(t.Context(), req, access.Caller{})
		if err != nil {
			return err.Error()
		}
		res.TookMS = 0
		b, _ := json.Marshal(res)
		return string(b)
	}
	alone := make([]string, len(reqs))
	for i, req := range reqs {
		alone[i] = answer(req)
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range reqs {
				j := (i*7 + g*5) % len(reqs)
				if got := answer(reqs[j]); got != alone[j] {
					t.Errorf("request %d answered at once with others:\n%s\nalone:\n%s", j, got, alone[j])
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestTinyVectorRanksAsItsDirection: a provider's vector whose length is
// so small that its inverse overflows float32 ranks as the same vector at
// ordinary length does: normalised in float32, its values became ±Inf and
// NaN, and its tool led or fell out of every semantic query's answer.
func TestTinyVectorRanksAsItsDirection(t *testing.T) {
	local := embedding.NewLocal(64)
	// 1e-40 is below float32's smallest normal value, and leaves the
	// vector's direction nearly as it was.
	tiny := New(Config{Embedder: &scalingEmbedder{local: local, match: func(t string) bool { return strings.Contains(t, "merge_pull_request") }, scale: 1e-40}})
	plain := New(Config{Embedder: &scalingEmbedder{local: local, match: func(string) bool { return false }}})
	mustBuild(t, tiny)
	mustBuild(t, plain)
	for _, q := range []string{"send a message to a slack channel", "read a file from disk", "merge an approved pull request"} {
		req := Request{Query: q, Mode: ModeSemantic, IncludeCore: ptr(false)}
		got, want := mustSearch(t, tiny, req), mustSearch(t, plain, req)
		if !slices.Equal(ids(got.Tools), ids(want.Tools)) {
			t.Errorf("%q: %v; want %v, as at ordinary length", q, ids(got.Tools), ids(want.Tools))
		}
		for _, h := range got.Tools {
			if h.Score != nil && (math.IsNaN(float64(*h.Score)) || math.IsInf(float64(*h.Score), 0)) {
				t.Errorf("%q: %s/%s scored %v", q, h.Server, h.Name, *h.Score)
			}
		}
	}
}

// TestExecutionReturned: a tool's task support comes back with its
// schemas, and in its mcp definition; a tool without has none.
func TestExecutionReturned(t *testing.T) {
	cat := catalogOf(t, []catalog.Tool{
		{Server: "lab", Name: "research", Description: "Run a deep research query on a topic and summarise the findings.", Tasks: catalog.TasksRequired},
		{Server: "lab", Name: "summarise", Description: "Summarise a document in a few sentences."},
	})
	svc := New(Config{Embedder: embedding.NewLocal(64), Version: "test"})
	if _, err := svc.Build(t.Context(), &Setup{Catalog: cat}); err != nil {
		t.Fatal(err)
	}
	res := mustSearch(t, svc, Request{Query: "select:research,summarise", IncludeSchema: true, Format: "mcp"})
	if len(res.Tools) != 2 || len(res.Definitions) != 2 {
		t.Fatalf("%d tools, %d definitions", len(res.Tools), len(res.Definitions))
	}
	if e := res.Tools[0].Execution; e == nil || e.TaskSupport != "required" || res.Tools[1].Execution != nil {
		t.Errorf("executions %+v, %+v; want required, then none", res.Tools[0].Execution, res.Tools[1].Execution)
	}
	if !strings.Contains(string(res.Definitions[0]), `"execution":{"taskSupport":"required"}`) || strings.Contains(string(res.Definitions[1]), "execution") {
		t.Errorf("mcp definitions %s, %s", res.Definitions[0], res.Definitions[1])
	}
}

// TestQueryKeysApart: no two lists of query parts, nor two tenants, share
// a cache entry: a conversation's ask and earlier words are not a query of
// their text run together, and a tenant's name cannot be read as part of
// a query.
func TestQueryKeysApart(t *testing.T) {
	info := embedding.Info{Provider: "p", Model: "m", Dimensions: 8}
	keys := []struct {
		tenant string
		parts  []string
	}{
		{"", []string{"ab"}},
		{"", []string{"a", "b"}},
		{"", []string{"", "ab"}},
		{"", []string{"ab", ""}},
		{"a", []string{"b"}},
		{"a\x00", []string{"b"}},
		{"", []string{"a\x00b"}},
		{"", []string{"a\x01" + "1:b", ""}},
		{"", []string{"a", "\x01" + "1:b"}},
	}
	seen := map[[32]byte]int{}
	for i, k := range keys {
		key := queryKey(info, k.tenant, k.parts...)
		if j, ok := seen[key]; ok {
			t.Errorf("%q %q and %q %q share a key", k.tenant, k.parts, keys[j].tenant, keys[j].parts)
		}
		seen[key] = i
	}
}
