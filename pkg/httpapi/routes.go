package httpapi

import (
	"cmp"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/toolsearch/toolsearch/pkg/console"
	"github.com/toolsearch/toolsearch/pkg/internal/mcphttp"
	"github.com/toolsearch/toolsearch/pkg/search"
)

// addRoutes is the whole API surface.
func addRoutes(r chi.Router, opts Options, svc *search.Service, m *metrics) {
	logger := opts.Logger
	writeTimeout := cmp.Or(opts.WriteTimeout, DefaultWriteTimeout)
	// Every route says which query parameters it takes (none, unless
	// listed; "*" marks one that may repeat): a misspelt, malformed,
	// repeated or empty one is a 400, not ignored.
	none := query(logger)
	trusted := proxies{opts.TrustedProxies, opts.Forwarded, opts.AssignedNetworks}
	fails := newAuthFailures(opts.Registerer)
	page := statusPage{svc: svc, ups: opts.Upstreams, direct: opts.CoreDirect}
	bodies := newBodyBudget(cmp.Or(opts.BodyBudgetBytes, DefaultBodyBudgetBytes), opts.Registerer)
	body, searchBody := bodies.limit(MaxBodyBytes), bodies.limit(SearchMaxBodyBytes)                                         // on a route that reads a body: after authenticate and throttle, so a caller refused reads none
	r.With(none).Method(http.MethodGet, "/healthz", handleHealthz())                                                         // the process is alive
	r.With(none).Method(http.MethodGet, "/readyz", handleReadyz(svc, opts.Draining))                                         // 200 once the first snapshot is published
	r.With(none).Method(http.MethodGet, "/mcp/tool-search/status", handleStatus(svc, page, opts.AdminToken, trusted, fails)) // open: probes and operators read it
	r.Method(http.MethodGet, console.Path+"*", consoleFiles(logger))                                                         // static; it calls the API below with the operator's key
	r.Method(http.MethodGet, "/", http.RedirectHandler(console.Path, http.StatusFound))
	r.Method(http.MethodGet, "/console", http.RedirectHandler(console.Path, http.StatusMovedPermanently))
	r.Group(func(r chi.Router) {
		// Bearer API keys, when configured; without, the client's address.
		r.Use(authenticate(logger, svc, trusted, fails))
		r.Use(throttle(opts.SearchRate, opts.SearchBurst, m)) // after authenticate: it budgets the caller that names
		r.With(none, searchBody).Method(http.MethodPost, "/mcp/tool-search", handleSearch(logger, svc))
		r.With(none).Method(http.MethodGet, "/mcp/tool-search/templates", handleTemplates(logger, svc))
		r.With(none).Method(http.MethodGet, "/mcp/tool-search/servers", handleServers(logger, svc))
		r.With(query(logger, "server*")).Method(http.MethodGet, "/mcp/tool-search/catalog", handleCatalog(logger, svc, writeTimeout)) // the console's catalog view
		r.With(none, body).Method(http.MethodPost, "/mcp/tool-search/feedback", handleFeedback(logger, svc))                          // the tools a search led to: learning
		r.With(query(logger, "tool")).Method(http.MethodGet, "/mcp/tool-search/learned", handleLearned(logger, svc))                  // what learning taught, for the key's tools
		if opts.Noop != nil {
			r.With(none, searchBody).Method(http.MethodPost, "/noop", handleNoop(logger, opts.Noop)) // load tests' baseline
		}
		if opts.MCP != nil {
			mcp, h := r.With(none, bodies.limit(MCPMaxBodyBytes)), mcpErrors(opts.MCP, writeTimeout)
			for _, method := range mcphttp.Methods { // Streamable HTTP: POST, GET (the session's stream), DELETE
				mcp.Method(method, mcpPath, h)
			}
		}
	})
	if opts.Noop != nil {
		r.Method(http.MethodPost, "/bare", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			encode(w, http.StatusOK, struct{}{})
		}))
	}
	if opts.AdminToken != "" {
		r.With(requireToken(logger, opts.AdminToken, trusted, fails), none).
			Method(http.MethodPost, "/mcp/tool-search/rebuild", handleRebuild(logger, svc, page, writeTimeout))
		r.With(requireToken(logger, opts.AdminToken, trusted, fails), query(logger, "tool")).
			Method(http.MethodDelete, "/mcp/tool-search/learned", handleResetLearned(logger, svc)) // forget what was learned
	}
}

// addMetricsRoutes is the metrics listener's surface. The probes are here
// as well as on the API's listener: callers holding every API connection
// (limits.max_connections) made /healthz wait to be accepted, and a
// kubelet probing there would restart a pod whose only fault was its load.
func addMetricsRoutes(r chi.Router, logger *slog.Logger, g prometheus.Gatherer, svc *search.Service, draining *atomic.Bool) {
	none := query(logger)
	// A collector that fails is logged, and the rest still served: by
	// default promhttp answered 500 and no series at all, so one broken
	// family took every other from the operator when most needed.
	// It takes no query parameters either: "?%zz" or "?x=1" answered the
	// whole exposition, as promhttp ignores them.
	r.With(none, limitScrapes(time.Now)).Method(http.MethodGet, "/metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{
		ErrorHandling: promhttp.ContinueOnError, ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelError)}))
	r.With(none).Method(http.MethodGet, "/healthz", handleHealthz())
	r.With(none).Method(http.MethodGet, "/readyz", handleReadyz(svc, draining))
}
