// Package httpapi serves the tool-search HTTP API: search, status, health,
// readiness and metrics.
package httpapi

import (
	"log/slog"
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolsearch/toolsearch/pkg/search"
)

// MaxBodyBytes caps a request body. A search request is a few hundred bytes;
// the cap keeps a hostile client from making the server buffer megabytes.
const MaxBodyBytes = 64 << 10

// NewServer returns the API's handler. reg receives the HTTP metrics and
// gatherer serves /metrics; pass the same prometheus.Registry for both.
func NewServer(logger *slog.Logger, reg prometheus.Registerer, gatherer prometheus.Gatherer, svc *search.Service) http.Handler {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	m := newMetrics(reg)
	r := chi.NewRouter()
	r.Use(middleware.RequestID, m.instrument, recoverer(logger))
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, r, logger, errorf(http.StatusNotFound, "not_found", "no route for %s %s", r.Method, r.URL.Path))
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, r, logger, errorf(http.StatusMethodNotAllowed, "method_not_allowed", "method %s is not allowed on %s", r.Method, r.URL.Path))
	})
	addRoutes(r, logger, svc, gatherer)
	return r
}

// recoverer turns a panic into a logged, counted 500. Every panic it catches
// is a bug to fix, not control flow.
func recoverer(logger *slog.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			defer func() {
				if v := recover(); v != nil {
					if v == http.ErrAbortHandler {
						panic(v)
					}
					logger.ErrorContext(r.Context(), "panic serving request", "panic", v, "path", r.URL.Path,
						"request_id", middleware.GetReqID(r.Context()))
					writeError(w, r, logger, errorf(http.StatusInternalServerError, "internal", "internal error"))
				}
			}()
			next.ServeHTTP(w, r)
		})
	}
}
