package search

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/toolsearch/toolsearch/pkg/access"
)

// testClock is a clock that moves only when told.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// A provider failing query after query stops being asked: after three
// failures searches are answered by keywords at once (provider_failing);
// after the cooldown one search probes, and a failed probe doubles it; a
// query in the cache is answered semantically throughout; a probe that
// succeeds closes the breaker.
func TestQueryBreaker(t *testing.T) {
	clock := &testClock{t: time.Now()}
	svc, p := faultyServiceAt(t, "", clock.now)
	mustBuild(t, svc)
	asked := func() int64 { return p.queries.Load() }
	cached := "merge a pull request"
	mustSearch(t, svc, Request{Query: cached})
	p.fault.Store("500")
	q := 0
	search := func() *Response {
		t.Helper()
		q++
		return mustSearch(t, svc, Request{Query: fmt.Sprintf("open the issue numbered %d", q)})
	}
	reason := func(res *Response) string {
		if res.Diagnostic == nil {
			return ""
		}
		return res.Diagnostic.EmbeddingReason
	}
	for _, step := range []struct {
		name      string
		advance   time.Duration
		fault     string
		wantAsked bool
		want      string // the answer's embedding_reason, "" for hybrid
		breaker   string
	}{
		{"first failure", 0, "500", true, "server_error", ""},
		{"second failure", 0, "500", true, "server_error", ""},
		{"third failure opens", 0, "500", true, "server_error", "open"},
		{"open: not asked", 0, "500", false, providerFailingReason, "open"},
		{"still open within the cooldown", queryBreakerFirst / 2, "500", false, providerFailingReason, "open"},
		{"the probe after the cooldown fails", queryBreakerFirst / 2, "500", true, "server_error", "open"},
		{"the cooldown doubled", queryBreakerFirst, "", false, providerFailingReason, "open"},
		{"the probe after it succeeds", queryBreakerFirst, "", true, "", ""},
		{"closed", 0, "", true, "", ""},
	} {
		clock.add(step.advance)
		p.fault.Store(step.fault)
		before := asked()
		res := search()
		if got := asked() > before; got != step.wantAsked {
			t.Errorf("%s: provider asked %v, want %v", step.name, got, step.wantAsked)
		}
		if got := reason(res); got != step.want || (step.want == "") != (res.Mode == "hybrid") {
			t.Errorf("%s: mode %q reason %q, want reason %q", step.name, res.Mode, got, step.want)
		}
		if got := svc.Status().QueryBreaker; got != step.breaker {
			t.Errorf("%s: status query_breaker %q, want %q", step.name, got, step.breaker)
		}
		if step.name == "open: not asked" {
			if res := mustSearch(t, svc, Request{Query: cached}); res.Mode != "hybrid" {
				t.Errorf("a cached query while the breaker is open: mode %q", res.Mode)
			}
			before := p.all.Load()
			svc.Warm(t.Context(), access.Caller{}, []string{"an audit's first query", "an audit's second query"})
			if p.all.Load() != before {
				t.Error("a catalog audit's warm-up asked the provider while the breaker is open")
			}
		}
	}
}

// A query the provider refuses (a 4xx but 429: too long for its model,
// say) is the query's fault, not the provider's: a caller sending such
// queries, one after another, does not open the breaker for everyone.
func TestQueryBreakerIgnoresRefusedQueries(t *testing.T) {
	svc, p := faultyService(t, "")
	mustBuild(t, svc)
	p.fault.Store("400")
	for i := range 2 * queryBreakerFailures {
		before := p.queries.Load()
		res := mustSearch(t, svc, Request{Query: fmt.Sprintf("a query too long for the model %d", i)})
		if p.queries.Load() == before || res.Diagnostic == nil || res.Diagnostic.EmbeddingReason != "client_error" {
			t.Fatalf("refused query %d: asked %v, diagnostic %+v", i, p.queries.Load() > before, res.Diagnostic)
		}
	}
	if st := svc.Status(); st.QueryBreaker != "" {
		t.Errorf("after refused queries: query_breaker %q", st.QueryBreaker)
	}
	p.fault.Store("")
	if res := mustSearch(t, svc, Request{Query: "merge a pull request"}); res.Mode != "hybrid" {
		t.Errorf("the next query: mode %q", res.Mode)
	}
}
