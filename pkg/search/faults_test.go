package search

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"

	"github.com/toolsearch/toolsearch/pkg/catalog"
	"github.com/toolsearch/toolsearch/pkg/embedding"
)

// faultyProvider serves /v1/embeddings, correctly or with the fault set.
type faultyProvider struct {
	fault   atomic.Value // string; "" is healthy
	srv     *httptest.Server
	queries atomic.Int64 // requests of one input
	all     atomic.Int64 // requests
}

func (p *faultyProvider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Input []string `json:"input"`
	}
	json.NewDecoder(r.Body).Decode(&req)
	n := len(req.Input)
	p.all.Add(1)
	if n == 1 {
		p.queries.Add(1)
	}
	vec := func(i int) string {
		return fmt.Sprintf(`{"index":%d,"embedding":[%d,1,0.5,0.25]}`, i, len(req.Input[i])%5+1)
	}
	items := func(count int, v func(int) string) string {
		parts := make([]string, count)
		for i := range parts {
			parts[i] = v(i)
		}
		return `{"data":[` + strings.Join(parts, ",") + `]}`
	}
	w.Header().Set("Content-Type", "application/json")
	switch f, _ := p.fault.Load().(string); f {
	case "timeout":
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	case "429":
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusTooManyRequests)
		w.Write([]byte(`{"error":{"message":"rate limited"}}`))
	case "500":
		w.WriteHeader(http.StatusInternalServerError)
		w.Write([]byte(`{"error":{"message":"boom"}}`))
	case "long": // inputs over 1,000 bytes are over the model's length
		for _, text := range req.Input {
			if len(text) > 1000 {
				w.WriteHeader(http.StatusBadRequest)
				fmt.Fprintf(w, `{"error":{"message":"This model's maximum context length is 250 tokens, however you requested %d tokens"}}`, len(text)/4)
				return
			}
		}
		w.Write([]byte(items(n, vec)))
	case "400": // the query's own fault: too long for the model, say
		w.WriteHeader(http.StatusBadRequest)
		w.Write([]byte(`{"error":{"message":"maximum context length exceeded"}}`))
	case "truncated":
		w.Write([]byte(items(n, vec)[:20]))
	case "wrong count":
		w.Write([]byte(items(max(n-1, 0), vec)))
	case "wrong dimension":
		w.Write([]byte(items(n, func(i int) string { return fmt.Sprintf(`{"index":%d,"embedding":[1,2]}`, i) })))
	case "non-finite":
		w.Write([]byte(items(n, func(i int) string { return fmt.Sprintf(`{"index":%d,"embedding":[1e999,1,1,1]}`, i) })))
	case "trickle":
		// Headers at once, then a byte at a time, slower than the timeout.
		w.WriteHeader(http.StatusOK)
		for _, b := range []byte(items(n, vec)) {
			w.Write([]byte{b})
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	default:
		w.Write([]byte(items(n, vec)))
	}
}

var faults = []string{"timeout", "refused", "429", "500", "truncated", "wrong count", "wrong dimension", "non-finite", "trickle"}

// faultyService is a service over a fault-injecting provider. "refused"
// is a closed port: the client dials an address nothing listens on.
func faultyService(t *testing.T, fault string) (*Service, *faultyProvider) {
	t.Helper()
	return faultyServiceAt(t, fault, time.Now)
}

// faultyServiceAt is faultyService whose clock is now.
func faultyServiceAt(t *testing.T, fault string, now func() time.Time) (*Service, *faultyProvider) {
	t.Helper()
	p := &faultyProvider{}
	p.srv = httptest.NewServer(p)
	t.Cleanup(p.srv.Close)
	url := p.srv.URL + "/v1"
	if fault == "refused" {
		url = "http://127.0.0.1:1/v1"
	} else {
		p.fault.Store(fault)
	}
	// Dimensions set: a consistent answer of another width is a fault only
	// against an expected width.
	emb := embedding.NewOpenAI(embedding.OpenAIConfig{BaseURL: url, APIKey: "sk-fault-test", Dimensions: 4, Timeout: 300 * time.Millisecond, MaxRetries: 1})
	svc := New(Config{Embedder: emb, QueryTimeout: 400 * time.Millisecond, RetryDelay: 20 * time.Millisecond, Now: now})
	return svc, p
}

func TestFaultsAtStartup(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	for _, fault := range faults {
		t.Run(fault, func(t *testing.T) {
			svc, p := faultyService(t, fault)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- svc.Run(ctx, defaultSetup(t)) }()
			waitFor(t, func() bool { return svc.Status().NextRetryAt != nil })
			st := svc.Status()
			if !st.Ready || st.Mode != "keyword" || !st.Degraded || st.LastError == "" {
				t.Fatalf("status during the fault = ready %v mode %q degraded %v last_error %q", st.Ready, st.Mode, st.Degraded, st.LastError)
			}
			res := mustSearch(t, svc, Request{Query: "merge a pull request"})
			if res.Mode != "keyword" || !res.Degraded || res.Diagnostic == nil || res.Diagnostic.EmbeddingError == "" || len(res.Tools) == 0 {
				t.Fatalf("search during the fault = %+v", res)
			}
			if strings.Contains(st.LastError, "sk-fault-test") {
				t.Error("status leaks the key")
			}
			if fault == "refused" {
				return // the address is fixed; recovery is covered by the other faults
			}
			p.fault.Store("")
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("no recovery after the fault cleared")
			}
			if st := svc.Status(); st.Mode != "semantic" || st.Degraded {
				t.Errorf("after the fault cleared: mode %q degraded %v", st.Mode, st.Degraded)
			}
			if res := mustSearch(t, svc, Request{Query: "merge a pull request"}); res.Mode != "hybrid" || res.Degraded {
				t.Errorf("search after recovery: mode %q degraded %v", res.Mode, res.Degraded)
			}
		})
	}
}

func TestFaultsMidTraffic(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	for _, fault := range faults {
		if fault == "refused" {
			continue // a provider cannot start refusing mid-test at the same address; see TestFaultsAtStartup
		}
		t.Run(fault, func(t *testing.T) {
			clock := &testClock{t: time.Now()}
			svc, p := faultyServiceAt(t, "", clock.now)
			mustBuild(t, svc)
			p.fault.Store(fault)
			for i := range queryBreakerFailures {
				// New words each time: the query cache must not hide the fault.
				res := mustSearch(t, svc, Request{Query: fmt.Sprintf("open issue number %d", i)})
				if res.Mode != "keyword" || !res.Degraded || res.Diagnostic == nil || len(res.Tools) == 0 || res.Diagnostic.EmbeddingReason == providerFailingReason {
					t.Fatalf("query %d during the fault = mode %q degraded %v diagnostic %+v", i, res.Mode, res.Degraded, res.Diagnostic)
				}
			}
			st := svc.Status()
			if st.Mode != "semantic" || st.LastQueryError == "" || st.LastQueryErrorAt == nil || st.QueryBreaker != "open" {
				t.Errorf("status during the fault: mode %q last_query_error %q query_breaker %q", st.Mode, st.LastQueryError, st.QueryBreaker)
			}
			// The breaker is open: the provider, healthy again, is not
			// asked until the breaker's first cooldown has passed.
			p.fault.Store("")
			if res := mustSearch(t, svc, Request{Query: "open issue after the fault"}); res.Mode != "keyword" || res.Diagnostic == nil || res.Diagnostic.EmbeddingReason != providerFailingReason {
				t.Errorf("with the breaker open: mode %q diagnostic %+v", res.Mode, res.Diagnostic)
			}
			clock.add(queryBreakerFirst)
			if res := mustSearch(t, svc, Request{Query: "open issue after the fault"}); res.Mode != "hybrid" || res.Degraded {
				t.Errorf("after the fault cleared and the cooldown: mode %q degraded %v", res.Mode, res.Degraded)
			}
			if st := svc.Status(); st.QueryBreaker != "" {
				t.Errorf("after recovery: query_breaker %q", st.QueryBreaker)
			}
		})
	}
}

// TestFollowRetriesPendingChange: an upstream's change that arrives while
// the provider fails is not lost. The rebuild fails and the semantic index
// keeps serving, status says the change is pending, and once the provider
// recovers the change is applied without anyone asking, in every fault.
func TestFollowRetriesPendingChange(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	for _, fault := range faults {
		if fault == "refused" {
			continue // fixed address; see TestFaultsAtStartup
		}
		t.Run(fault, func(t *testing.T) {
			svc, p := faultyService(t, "")
			var added atomic.Bool
			svc.cfg.Load = func(context.Context) (*Setup, error) {
				parts := []catalog.Part{{Source: "base", Servers: []catalog.Server{{Name: "files", Tools: []catalog.Tool{{Name: "read_file", Description: "Read a file."}}}}}}
				if added.Load() {
					parts = append(parts, catalog.Part{Source: "upstream:u", Lenient: true, Servers: []catalog.Server{{Name: "u", Tools: []catalog.Tool{{Name: "brand_new", Description: "Frobnicate the widgets."}}}}})
				}
				cat, err := catalog.New(parts)
				return &Setup{Catalog: cat}, err
			}
			if _, err := svc.Rebuild(t.Context()); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			changed := make(chan struct{}, 1)
			done := make(chan struct{})
			go func() { defer close(done); svc.Follow(ctx, changed) }()
			defer func() { cancel(); <-done }()

			p.fault.Store(fault)
			added.Store(true)
			changed <- struct{}{}
			waitFor(t, func() bool { st := svc.Status(); return st.PendingChanges && st.NextRetryAt != nil })
			if got := mustSearch(t, svc, Request{Query: "select:brand_new"}); len(got.Tools) != 0 {
				t.Fatalf("the change was applied while the provider failed: %+v", got.Tools)
			}
			p.fault.Store("")
			waitFor(t, func() bool { return !svc.Status().PendingChanges })
			if got := mustSearch(t, svc, Request{Query: "select:brand_new"}); len(got.Tools) != 1 {
				t.Errorf("after the provider recovered, select:brand_new = %+v", got.Tools)
			}
			if st := svc.Status(); st.Mode != "semantic" || st.NextRetryAt != nil {
				t.Errorf("after recovery: mode %q next_retry_at %v", st.Mode, st.NextRetryAt)
			}
		})
	}
}

// TestFollowIsPaced: the first change after a quiet spell is rebuilt at
// once; changes that come while the next rebuild may not start yet are
// read by one rebuild, FollowGap after the last began, not one each; and
// status says a change is pending meanwhile.
func TestFollowIsPaced(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	var loads atomic.Int32
	const gap = 500 * time.Millisecond
	svc := New(Config{Embedder: embedding.NewLocal(64), FollowGap: gap, Load: func(context.Context) (*Setup, error) {
		loads.Add(1)
		return defaultSetup(t), nil
	}})
	ctx, cancel := context.WithCancel(t.Context())
	changed := make(chan struct{}, 1)
	done := make(chan struct{})
	go func() { defer close(done); svc.Follow(ctx, changed) }()
	defer func() { cancel(); <-done }()

	changed <- struct{}{}
	waitFor(t, func() bool { return loads.Load() == 1 && !svc.Status().PendingChanges })
	// Three more changes within the gap, sent as the upstream manager
	// sends them (never blocking): Follow takes the first and waits out
	// the gap, the second waits in the channel, the third finds it full.
	changed <- struct{}{}
	waitFor(t, func() bool { return len(changed) == 0 && svc.Status().PendingChanges })
	for range 2 {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	if !svc.Status().PendingChanges || loads.Load() != 1 {
		t.Errorf("within the gap: pending %v, %d rebuilds; want pending, still 1", svc.Status().PendingChanges, loads.Load())
	}
	waitFor(t, func() bool { return loads.Load() == 2 && !svc.Status().PendingChanges })
	time.Sleep(2 * gap) // room for a third rebuild, were the changes not merged
	if n := loads.Load(); n != 2 {
		t.Errorf("%d rebuilds for a change and three within the gap; want 2", n)
	}
}

// A rebuild whose context ends (the process stopping, or the operator who
// asked for it gone) stopped rather than failed: status keeps no error for
// it, the failed-builds counter does not move, and the index serving
// stays.
func TestStoppedRebuildIsNoFailure(t *testing.T) {
	p := &faultyProvider{}
	p.srv = httptest.NewServer(p)
	t.Cleanup(p.srv.Close)
	emb := embedding.NewOpenAI(embedding.OpenAIConfig{BaseURL: p.srv.URL + "/v1", APIKey: "sk-fault-test", Dimensions: 4, Timeout: time.Second})
	reg := prometheus.NewRegistry()
	svc := New(Config{Embedder: emb, Registerer: reg})
	before := mustBuild(t, svc)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := svc.Build(ctx, editedSetup(t, defaultSetup(t))); !errors.Is(err, context.Canceled) {
		t.Fatalf("a rebuild with its context ended = %v, want context.Canceled", err)
	}
	if st := svc.Status(); st.LastError != "" || st.LastErrorAt != nil {
		t.Errorf("status after a stopped rebuild: last_error %q at %v", st.LastError, st.LastErrorAt)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			if f.GetName() == "toolsearch_index_builds_total" && m.GetLabel()[0].GetValue() == "error" && m.GetCounter().GetValue() != 0 {
				t.Errorf("failed builds counted: %v", m)
			}
		}
	}
	if svc.Current() != before {
		t.Error("a stopped rebuild replaced the snapshot serving")
	}
}
