package httpapi

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"github.com/toolsearch/toolsearch/pkg/access"
)

type metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	// spent and refused count the callers' budgets of work (throttle) by
	// workRequest, each request's own unit, and by the access.Work spent
	// beyond it: every label made once, none looked up by a request.
	spent, refused map[access.Work]prometheus.Counter
	logger         *slog.Logger
	refusals       *lineBudget      // the access log's budget for refusals' lines
	now            func() time.Time // time.Now; a test's clock
}

// logBox carries what a handler learns (the ranking mode) out to the
// access log.
type logBox struct{ mode string }

type logBoxKey struct{}

func noteMode(r *http.Request, mode string) {
	if b, ok := r.Context().Value(logBoxKey{}).(*logBox); ok {
		b.mode = mode
	}
}

// quiet routes are polled by probes and scrapers; their access lines are
// debug-level so they do not drown the requests that matter.
var quiet = map[string]bool{"/healthz": true, "/readyz": true, "/metrics": true}

func newMetrics(reg prometheus.Registerer, logger *slog.Logger) *metrics {
	f := promauto.With(reg)
	m := &metrics{
		logger: logger, refusals: newRefusalLines(), now: time.Now,
		requests: f.NewCounterVec(prometheus.CounterOpts{
			Name: "toolsearch_http_requests_total", Help: "HTTP requests by route pattern, method and status code.",
		}, []string{"route", "method", "code"}),
		duration: f.NewHistogramVec(prometheus.HistogramOpts{
			Name: "toolsearch_http_request_duration_seconds", Help: "HTTP request latency by route pattern and status code.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}, []string{"route", "code"}),
		spent: map[access.Work]prometheus.Counter{}, refused: map[access.Work]prometheus.Counter{},
	}
	works := fmt.Sprint(access.Works) // the labels beyond workRequest, as the help lists them
	spent := f.NewCounterVec(prometheus.CounterOpts{
		Name: "toolsearch_budget_units_total", Help: "Units of callers' budgets of work spent: request (each request's own) or the work beyond it " + works + ".",
	}, []string{"work"})
	refused := f.NewCounterVec(prometheus.CounterOpts{
		Name: "toolsearch_budget_refusals_total", Help: "Requests refused 429 for want of budget: on entry (request) or before work beyond it " + works + ".",
	}, []string{"work"})
	for _, w := range append([]access.Work{workRequest}, access.Works...) {
		m.spent[w], m.refused[w] = spent.WithLabelValues(string(w)), refused.WithLabelValues(string(w))
	}
	return m
}

// workRequest labels a request's own unit of budget.
const workRequest access.Work = "request"

// instrument counts, times and logs every request, labelled by chi's route
// pattern (read after routing, so "/mcp/tool-search", never a raw path).
// The access line never holds headers or bodies, where secrets travel.
func (m *metrics) instrument(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		box := &logBox{}
		r = r.WithContext(context.WithValue(r.Context(), logBoxKey{}, box))
		ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
		next.ServeHTTP(ww, r)
		route := "unmatched"
		if rc := chi.RouteContext(r.Context()); rc != nil && rc.RoutePattern() != "" {
			route = rc.RoutePattern()
		}
		status := ww.Status()
		if status == 0 {
			status = http.StatusOK
		}
		code := codeLabel(status)
		method := methodLabel(r.Method)
		took := time.Since(start)
		m.requests.WithLabelValues(route, method, code).Inc()
		m.duration.WithLabelValues(route, code).Observe(took.Seconds())
		level := slog.LevelInfo
		if quiet[route] && status < 400 {
			level = slog.LevelDebug
		}
		if status >= 400 && status != http.StatusInternalServerError && !m.refusals.admit(m.now()) {
			return
		}
		m.refusals.summarise(m.logger, m.now)
		// Room for the mode, so that a search's line is one allocation too.
		attrs := append(make([]slog.Attr, 0, 6), slog.String("method", method), slog.String("route", route), slog.Int("status", status),
			slog.Float64("duration_ms", float64(took.Microseconds())/1000), slog.String("request_id", middleware.GetReqID(r.Context())))
		if box.mode != "" {
			attrs = append(attrs, slog.String("mode", box.mode))
		}
		m.logger.LogAttrs(r.Context(), level, "request", attrs...)
	})
}

// CountConnections is an http.Server ConnState hook that keeps a gauge of
// the server's open connections, so that an operator sees it come to
// limits.max_connections.
func CountConnections(reg prometheus.Registerer) func(net.Conn, http.ConnState) {
	open := promauto.With(reg).NewGauge(prometheus.GaugeOpts{
		Name: "toolsearch_http_connections", Help: "Open connections to the API listener (limits.max_connections bounds them).",
	})
	return func(_ net.Conn, state http.ConnState) {
		switch state {
		case http.StateNew:
			open.Inc()
		case http.StateClosed, http.StateHijacked:
			open.Dec()
		}
	}
}

// ReclaimIdle wraps next, srv's ConnState hook, for a listener that holds
// at most bound connections: reaching the bound turns srv's keep-alives
// off, which closes its idle connections at once (and any other after its
// response), and they come back on once the open connections fall to
// three quarters of it. Otherwise bound keep-alive connections, each the
// cost of one request, kept every new client waiting in the kernel's queue
// for srv's IdleTimeout. nginx reclaims idle connections the same way.
func ReclaimIdle(srv *http.Server, bound int, next func(net.Conn, http.ConnState)) func(net.Conn, http.ConnState) {
	var (
		open atomic.Int64
		off  atomic.Bool // read without mu, so a close under the bound takes no lock
		mu   sync.Mutex  // one switch at a time, each decided again under it
	)
	full, eased := int64(bound), int64(bound)*3/4
	flip := func() {
		mu.Lock()
		defer mu.Unlock()
		switch n := open.Load(); {
		case !off.Load() && n >= full:
			off.Store(true)
		case off.Load() && n <= eased:
			off.Store(false)
		default:
			return
		}
		srv.SetKeepAlivesEnabled(!off.Load())
	}
	return func(c net.Conn, state http.ConnState) {
		switch state {
		case http.StateNew:
			if open.Add(1) >= full && !off.Load() {
				flip()
			}
		case http.StateClosed, http.StateHijacked:
			if open.Add(-1) <= eased && off.Load() {
				flip()
			}
		}
		if next != nil {
			next(c, state)
		}
	}
}
