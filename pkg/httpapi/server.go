// Package httpapi serves the tool-search HTTP API (search, templates,
// status, rebuild, health, readiness, MCP) and, on a listener of its own,
// the metrics.
package httpapi

import (
	"cmp"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolsearch/toolsearch/pkg/console"
	"github.com/toolsearch/toolsearch/pkg/redact"
	"github.com/toolsearch/toolsearch/pkg/search"
	"github.com/toolsearch/toolsearch/pkg/upstream"
)

// MaxBodyBytes caps a request body on a route other than a search's and
// /mcp (feedback names a search and at most 50 tools).
const MaxBodyBytes = 64 << 10

// SearchMaxBodyBytes caps a search's body, the same as /mcp's: a router
// sends its conversation as its model's API holds it, with its images
// and tools' outputs, which the search skips or reads only the start of.
// At 64 KiB, a chat holding one screenshot, or a few files a tool had
// read, was refused every search once it held them.
const SearchMaxBodyBytes = MCPMaxBodyBytes

// Options are NewServer's optional dependencies.
type Options struct {
	Logger     *slog.Logger          // nil discards
	Registerer prometheus.Registerer // receives the HTTP metrics; nil registers nowhere
	// AdminToken enables POST /mcp/tool-search/rebuild for bearers of it.
	// Empty: the route does not exist (404).
	AdminToken string
	// MCP, when set, is served at /mcp behind the same API keys.
	MCP http.Handler
	// Instance, when set, is the name this process gives itself on its
	// requests to upstreams (upstream.Options.Instance): a request that
	// carries it came from this process, through an upstream that points
	// back here, and is refused as a loop.
	Instance string
	// Upstreams, when set, adds live upstream health to the status page.
	Upstreams upstreamStatuser
	// CoreDirect, when set, adds to the status page the core tools MCP's
	// tools/list lists short (mcpserver.Server.DirectWarnings).
	CoreDirect directWarner
	// Noop, when set, adds the baselines of load tests: POST /noop takes
	// a search request exactly as POST /mcp/tool-search does (the same
	// middleware, authentication, throttle and strict decoding) and
	// writes what Noop returns for it, a pre-encoded answer (the search's
	// own, for a load test's queries), without searching; POST /bare,
	// outside every middleware but the router's, reads nothing and
	// writes {}. Unset in serve.
	Noop func(search.Request) []byte
	// Draining, when set and true, makes /readyz answer 503 so that load
	// balancers stop sending traffic before the server shuts down.
	Draining *atomic.Bool
	// SearchRate limits search requests (search, templates, /mcp) per API
	// key, or per client address without keys, to this many a second with
	// bursts of SearchBurst. 0: no limit.
	SearchRate  float64
	SearchBurst int
	// TrustedProxies are the proxies whose X-Forwarded-For, or with
	// Forwarded set their Forwarded (RFC 7239), names an anonymous caller
	// (see clientHost).
	TrustedProxies []netip.Prefix
	Forwarded      bool
	// AssignedNetworks are IPv6 networks whose addresses are each a
	// client (auth.assigned_networks), where any other IPv6 client is
	// its /64.
	AssignedNetworks []netip.Prefix
	// WriteTimeout bounds how long an answer may take to be written, but
	// on /mcp; DefaultWriteTimeout when 0.
	WriteTimeout time.Duration
	// AnyHost serves a request that reached a loopback address whatever
	// Host it names (see localHost): for a proxy that connects over
	// loopback, at the price of the protection against DNS rebinding.
	AnyHost bool
	// BodyBudgetBytes bounds the request bodies being read and handled
	// at once (DefaultBodyBudgetBytes when 0, none when -1), a quarter
	// of it (at least MCPMaxBodyBytes) a caller's; a request it cannot
	// hold is answered 503 busy. It must be at least MCPMaxBodyBytes,
	// the largest body a route takes.
	BodyBudgetBytes int64
}

// NewServer returns the API's handler.
func NewServer(svc *search.Service, opts Options) http.Handler {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	m := newMetrics(opts.Registerer, opts.Logger)
	r := chi.NewRouter()
	// HEAD is answered wherever GET is (load balancers probe with it).
	r.Use(answerHeaders, decodedPath, requestID, m.instrument, recoverer(opts.Logger), writeWithin(cmp.Or(opts.WriteTimeout, DefaultWriteTimeout)))
	if !opts.AnyHost {
		r.Use(localHost(opts.Logger))
	}
	r.Use(middleware.GetHead)
	if opts.Instance != "" {
		r.Use(refuseSelf(opts.Logger, opts.Instance))
	}
	r.NotFound(notFound(opts.Logger))
	r.MethodNotAllowed(methodNotAllowed(opts.Logger, r))
	addRoutes(r, opts, svc, m)
	return r
}

// DefaultWriteTimeout bounds how long an answer may take to be written: a
// client that stops reading lets go of it, and of the snapshot it was
// made from, then. /mcp clears it: its event streams last as long as the
// session or the call.
const DefaultWriteTimeout = 30 * time.Second

// writeWithin sets the connection's write deadline d from the request's
// start. The server has no WriteTimeout, which would end MCP's streams,
// so without this a client that never reads held its answer (28 MB for
// the catalog of 100,000 tools) for as long as it kept the connection.
func writeWithin(d time.Duration) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(d))
			next.ServeHTTP(w, r)
		})
	}
}

// refuseSelf answers a request from this very process 508 Loop Detected:
// an upstream configured at the service's own /mcp listed the meta-tools
// as catalog tools once the service was ready, and kept a service with
// no other tools from ever being ready, its upstream failing with a bare
// "Service Unavailable".
func refuseSelf(logger *slog.Logger, instance string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get(upstream.InstanceHeader) == instance {
				writeError(w, r, logger, errorf(http.StatusLoopDetected, "loop_detected",
					"this request comes from this toolsearch service itself: an upstream in its config points back at it"))
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// localHost refuses a request that reached a loopback address under
// another host's name: a web page whose name was rebound to 127.0.0.1
// (DNS rebinding) would otherwise read search answers, the catalog and
// the console, and teach learning, as the desktop user. A connection
// from elsewhere is not affected. The MCP SDK applies the same rule to
// /mcp itself, answered there as JSON-RPC.
func localHost(logger *slog.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			local, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
			if local != nil && !mcpRoute(r) && loopbackAddr(local) && !loopback(r.Host) {
				writeError(w, r, logger, errorf(http.StatusForbidden, "forbidden_host", "a request to a loopback address must name it (localhost, 127.0.0.1 or [::1]), not %s", redact.Echo(r.Host)))
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// loopbackAddr reports whether a listener's address is a loopback one,
// without formatting it (every request asks).
func loopbackAddr(a net.Addr) bool {
	if t, ok := a.(*net.TCPAddr); ok {
		return t.IP.IsLoopback()
	}
	return loopback(a.String())
}

// loopback reports whether a host, with or without its port, is
// localhost or a loopback address.
func loopback(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = strings.Trim(hostport, "[]")
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// NewMetricsServer serves g at /metrics (GET and HEAD), for a listener of
// its own: index size and upstream health are operators' figures, so they
// stay off the port callers reach (the manifests expose it to the
// cluster's scraper only). It answers /healthz and /readyz too, as the
// API's listener does (draining says when /readyz fails for a shutdown),
// so that the kubelet's probes do not queue behind the API's connection
// bound. Other paths are JSON 404s.
func NewMetricsServer(g prometheus.Gatherer, logger *slog.Logger, svc *search.Service, draining *atomic.Bool) http.Handler {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	r := chi.NewRouter()
	r.Use(answerHeaders, decodedPath, requestID, middleware.GetHead)
	r.NotFound(notFound(logger))
	r.MethodNotAllowed(methodNotAllowed(logger, r))
	addMetricsRoutes(r, logger, g, svc, draining)
	return r
}

// methodNotAllowed answers a method routes does not take on a path it
// has. With a custom 405 handler chi no longer writes Allow; the router is
// asked which methods the path has, so a new route is never missed.
func methodNotAllowed(logger *slog.Logger, routes chi.Routes) http.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request) {
		var allowed []string
		for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
			if routes.Match(chi.NewRouteContext(), m, req.URL.Path) {
				allowed = append(allowed, m)
				if m == http.MethodGet && !mcpRoute(req) {
					// middleware.GetHead serves it; /mcp's GET is a
					// session's stream, of which HEAD is refused.
					allowed = append(allowed, http.MethodHead)
				}
			}
		}
		if len(allowed) == 0 {
			// chi sends a method it does not know (FOO) here whatever the
			// path: on one no route has, that was a 405 with an empty Allow.
			notFound(logger)(w, req)
			return
		}
		w.Header().Set("Allow", strings.Join(allowed, ", "))
		writeError(w, req, logger, errorf(http.StatusMethodNotAllowed, "method_not_allowed", "method %s is not allowed on %s", clip(req.Method, maxEcho), clip(req.URL.Path, maxEcho)))
	}
}

// answerHeaders marks every answer as not to be stored by any cache and
// not to be read as anything but its own type. Answers depend on the
// caller's key and the index of the moment, and JSON answers carry tool
// descriptions from upstreams unescaped (HTML escaping is off), which a
// browser that sniffed them could take for a page. A route may set its
// own Cache-Control (the console's static files revalidate).
func answerHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		// Shared, never appended to in place (len = cap): no allocation a request.
		h["Cache-Control"] = noStore
		h["X-Content-Type-Options"] = noSniff
		next.ServeHTTP(w, r)
	})
}

var noStore, noSniff = []string{"no-store"}, []string{"nosniff"}

// decodedPath routes a request by its decoded path, as net/http's own mux
// does. chi routes by the path as sent when the client escaped what it
// need not have (/mcp/tool%2Dsearch), and answered 404 "no route for POST
// /mcp/tool-search", naming a route that exists. The escaped form is
// dropped for what follows too: http.StripPrefix (the console's files)
// cuts it as well, and answered a plain-text 404 for /consol%65/ when it
// did not start with the prefix. An escaped slash is routed as sent: it
// is part of a segment, never a separator, so such a path matches no
// route.
func decodedPath(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if raw := r.URL.RawPath; raw != "" && !strings.Contains(raw, "%2F") && !strings.Contains(raw, "%2f") {
			u := *r.URL
			u.RawPath = ""
			r = r.WithContext(r.Context())
			r.URL = &u
			if rc := chi.RouteContext(r.Context()); rc != nil {
				rc.RoutePath = u.Path
			}
		}
		next.ServeHTTP(w, r)
	})
}

// notFound names the path as it was routed, escaped: an escaped slash
// (decodedPath leaves those) as sent, since decoded it would read as a
// route that exists.
func notFound(logger *slog.Logger) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		writeError(w, r, logger, errorf(http.StatusNotFound, "not_found", "no route for %s %s", clip(r.Method, maxEcho), clip(r.URL.EscapedPath(), maxEcho)))
	}
}

// consoleFiles serves the console's files. What the file server answers
// in plain text, a Range past a file's end (or of a unit it does not
// read) and a precondition that does not hold, is held back as /mcp's SDK
// errors are and answered as the API's JSON error.
func consoleFiles(logger *slog.Logger) http.Handler {
	files := console.Handler(notFound(logger))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ew := &errorWriter{ResponseWriter: w}
		files.ServeHTTP(ew, r)
		if ew.status == 0 {
			return
		}
		var e *apiError
		switch ew.status {
		case http.StatusRequestedRangeNotSatisfiable:
			e = errorf(http.StatusRequestedRangeNotSatisfiable, "range_not_satisfiable", "Range %s is not one of this file's", redact.Echo(r.Header.Get("Range")))
		case http.StatusPreconditionFailed:
			e = errorf(http.StatusPreconditionFailed, "precondition_failed", "a precondition (If-Match, If-Unmodified-Since) does not hold for this file")
		default:
			e = errorf(http.StatusInternalServerError, "internal", "internal error")
		}
		// The file server drops Cache-Control from its errors; a 416 keeps
		// its Content-Range, bytes */length.
		w.Header()["Cache-Control"] = noStore
		writeError(w, r, logger, e)
	})
}

// recoverer turns a panic into a logged 500. Every panic it catches is a
// bug to fix, not control flow.
func recoverer(logger *slog.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			defer func() {
				if v := recover(); v != nil {
					if v == http.ErrAbortHandler {
						panic(v)
					}
					logger.ErrorContext(r.Context(), "panic serving request", "panic", v, "path", clip(r.URL.Path, maxEcho),
						"request_id", middleware.GetReqID(r.Context()))
					writeError(w, r, logger, errorf(http.StatusInternalServerError, "internal", "internal error"))
				}
			}()
			next.ServeHTTP(w, r)
		})
	}
}
