package httpapi

import (
	"io"
	"net/http"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"golang.org/x/sync/semaphore"

	"github.com/toolsearch/toolsearch/pkg/access"
	"github.com/toolsearch/toolsearch/pkg/internal/reqbody"
)

// DefaultBodyBudgetBytes bounds the request bodies being read and handled
// at once, over every route that takes one. Each route bounds its own
// body (MaxBodyBytes; 1 MiB on a search and /mcp), but a body is held while
// it arrives: 200 clients each sending 1 MB to /mcp and holding back its
// last byte made a process that idles at 24 MiB hold 161 MiB, and 400
// would pass the 256 Mi the manifests give a pod, with or without keys
// configured (the caller is let in before its body is read).
const DefaultBodyBudgetBytes = 16 << 20

// MCPMaxBodyBytes is /mcp's bound on a body, which the MCP endpoint
// enforces itself (mcpserver.MaxRequestBytes, which TestBodyBoundsAgree
// holds this to): a call_tool's arguments are the largest thing a
// client sends.
const MCPMaxBodyBytes = 1 << 20

// bodyBudget lends request bodies room to be read in: each request
// declares its size (Content-Length; its route's bound when it is not
// known) and holds that much of the budget until it has been answered.
// One caller (a key; without one, a client address) holds at most a
// share of it, so that one sending slow bodies cannot take it all and
// leave every other caller's bodies refused.
type bodyBudget struct {
	sem   *semaphore.Weighted
	share int64 // a caller's, at least any route's bound
	inUse prometheus.Gauge

	mu   sync.Mutex
	held map[access.Caller]int64 // only callers holding some: as many as requests in flight
}

// One caller may hold 1/callerShare of the budget.
const callerShare = 4

// newBodyBudget is a budget of total bytes; nil (no bound) when total is
// negative.
func newBodyBudget(total int64, reg prometheus.Registerer) *bodyBudget {
	if total < 0 {
		return nil
	}
	return &bodyBudget{
		sem: semaphore.NewWeighted(total), share: max(total/callerShare, MCPMaxBodyBytes), held: map[access.Caller]int64{},
		inUse: promauto.With(reg).NewGauge(prometheus.GaugeOpts{
			Name: "toolsearch_http_body_budget_bytes",
			Help: "Bytes of request bodies being read or handled at once, of limits.request_body_budget_bytes.",
		}),
	}
}

// BodyUnitBytes is the body a request may send for its one unit of work;
// each further BodyUnitBytes costs a unit more. What a request costs
// beyond its search grows with its body: at 100,000 tools, 1 MiB of
// names in visible_tools took 51 ms more than a search, other bodies of
// 1 MiB 12 to 30 ms (2026-12-06, against the binary), and a unit pays for
// a search's 4 to 6 ms; so a caller's budget, not the body's bound alone,
// bounds what its bodies cost.
const BodyUnitBytes = 64 << 10

// limit holds a request's body size, at most bound (the route's own
// bound, which the handler enforces), while it is served, and charges
// the caller's budget a unit for each whole BodyUnitBytes of it read, up
// to the bound. A request the budget of bodies cannot hold now is
// answered 503 at once, with Retry-After, rather than kept waiting with
// its connection open, and charged nothing.
func (b *bodyBudget) limit(bound int64) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			n := r.ContentLength
			if n < 0 || n > bound {
				n = bound // unknown (chunked); or over the bound, of which only the bound is kept
			}
			if n == 0 { // no body (a server's request has http.NoBody then)
				next.ServeHTTP(w, r)
				return
			}
			if b != nil {
				caller := access.CallerFrom(r.Context())
				if why := b.take(caller, n); why != "" {
					reqbody.Discard(r) // so a client still sending reads the 503
					busy := errorf(http.StatusServiceUnavailable, "busy", "%s; retry in a second", why)
					busy.RetryAfter = 1
					writeError(w, r, nil, busy)
					return
				}
				defer b.give(caller, n)
			}
			// Charged once read, into debt: admitting the request took
			// the caller's unit, and one in debt is refused its next.
			// What is read past the bound is drained, not decoded: a
			// client's 10 MB mistake costs what 1 MiB does.
			body := &countedBody{ReadCloser: r.Body}
			r.Body = body
			defer func() { access.Charge(r.Context(), access.WorkBody, int(min(body.n, bound)/BodyUnitBytes)) }()
			next.ServeHTTP(w, r)
		})
	}
}

// take reserves n bytes for caller, or says why it cannot.
func (b *bodyBudget) take(caller access.Caller, n int64) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.held[caller]+n > b.share {
		return "this caller's request bodies being read at once are as many as one caller may hold"
	}
	if !b.sem.TryAcquire(n) {
		return "the server is reading as many request bodies as it holds at once"
	}
	b.held[caller] += n
	b.inUse.Add(float64(n))
	return ""
}

func (b *bodyBudget) give(caller access.Caller, n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.held[caller] -= n; b.held[caller] == 0 {
		delete(b.held, caller)
	}
	b.inUse.Sub(float64(n))
	b.sem.Release(n)
}

// countedBody counts the bytes read of a body.
type countedBody struct {
	io.ReadCloser
	n int64
}

func (c *countedBody) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	c.n += int64(n)
	return n, err
}
