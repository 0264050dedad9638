package httpapi

import (
	"log/slog"
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/toolsearch/toolsearch/pkg/search"
)

// addRoutes is the whole API surface.
func addRoutes(r chi.Router, logger *slog.Logger, svc *search.Service, gatherer prometheus.Gatherer) {
	r.Method(http.MethodGet, "/healthz", handleHealthz())  // the process is alive
	r.Method(http.MethodGet, "/readyz", handleReadyz(svc)) // 200 once the first snapshot is published
	r.Method(http.MethodGet, "/metrics", promhttp.HandlerFor(gatherer, promhttp.HandlerOpts{}))
	r.Method(http.MethodPost, "/mcp/tool-search", handleSearch(logger, svc))
	r.Method(http.MethodGet, "/mcp/tool-search/status", handleStatus(svc))
}
