package httpapi

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/toolsearch/toolsearch/pkg/console"
	"github.com/toolsearch/toolsearch/pkg/search"
)

// addRoutes is the whole API surface.
func addRoutes(r chi.Router, opts Options, svc *search.Service) {
	logger := opts.Logger
	r.Method(http.MethodGet, "/healthz", handleHealthz())                                                   // the process is alive
	r.Method(http.MethodGet, "/readyz", handleReadyz(svc, opts.Draining))                                   // 200 once the first snapshot is published
	r.Method(http.MethodGet, "/mcp/tool-search/status", handleStatus(svc, opts.Upstreams, opts.AdminToken)) // open: probes and operators read it
	r.Method(http.MethodGet, console.Path+"*", console.Handler())                                           // static; it calls the API below with the operator's key
	r.Method(http.MethodGet, "/", http.RedirectHandler(console.Path, http.StatusFound))
	r.Method(http.MethodGet, "/console", http.RedirectHandler(console.Path, http.StatusMovedPermanently))
	r.Group(func(r chi.Router) {
		r.Use(authenticate(logger, svc)) // bearer API keys, when configured
		r.Use(throttle(opts.SearchRate, opts.SearchBurst))
		r.Method(http.MethodPost, "/mcp/tool-search", handleSearch(logger, svc))
		r.Method(http.MethodGet, "/mcp/tool-search/templates", handleTemplates(logger, svc))
		r.Method(http.MethodGet, "/mcp/tool-search/servers", handleServers(logger, svc))
		r.Method(http.MethodGet, "/mcp/tool-search/catalog", handleCatalog(logger, svc)) // the console's catalog view
		if opts.MCP != nil {
			r.Handle("/mcp", mcpErrors(opts.MCP)) // Streamable HTTP: POST, GET (event stream), DELETE
		}
	})
	if opts.Noop {
		r.Method(http.MethodPost, "/noop", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			encode(w, http.StatusOK, struct{}{})
		}))
	}
	if opts.AdminToken != "" {
		r.With(requireToken(logger, opts.AdminToken)).
			Method(http.MethodPost, "/mcp/tool-search/rebuild", handleRebuild(logger, svc, opts.Upstreams))
	}
}
