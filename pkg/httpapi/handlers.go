package httpapi

import (
	"cmp"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"runtime/debug"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/toolsearch/toolsearch/pkg/access"
	"github.com/toolsearch/toolsearch/pkg/catalog"
	"github.com/toolsearch/toolsearch/pkg/inspect"
	"github.com/toolsearch/toolsearch/pkg/redact"
	"github.com/toolsearch/toolsearch/pkg/search"
	"github.com/toolsearch/toolsearch/pkg/upstream"
)

// authenticate admits requests with a known bearer key and puts the
// caller in the context. Without configured keys every caller is admitted
// as anonymous.
func authenticate(logger *slog.Logger, svc *search.Service, trusted proxies, fails *authFailures) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			token, addr, refused := fails.guard(r, trusted)
			if refused != nil {
				writeError(w, r, logger, refused)
				return
			}
			caller, err := svc.Authenticate(token)
			if err != nil {
				if token != "" && errors.Is(err, access.ErrUnauthorized) {
					fails.fail(addr)
				}
				writeError(w, r, logger, err)
				return
			}
			if caller.Key == "" {
				caller.Address = cmp.Or(addr, clientHost(r, trusted))
			}
			next.ServeHTTP(w, r.WithContext(access.WithCaller(r.Context(), caller)))
		})
	}
}

// bearer is the request's bearer token, or "" unless it has exactly one
// Authorization header: which of two would count depends on the proxies
// in between, so neither does.
func bearer(r *http.Request) string {
	v := r.Header.Values("Authorization")
	if len(v) != 1 {
		return ""
	}
	h := v[0]
	if len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
		return strings.TrimSpace(h[7:])
	}
	return ""
}

// requireToken admits only bearers of token (the admin token), compared
// in constant time; anyone else is told which credential the route wants,
// not an API key's.
func requireToken(logger *slog.Logger, token string, trusted proxies, fails *authFailures) func(http.Handler) http.Handler {
	ok := tokenCheck(token)
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			presented, addr, refused := fails.guard(r, trusted)
			if refused != nil {
				writeError(w, r, logger, refused)
				return
			}
			if !ok(presented) {
				if presented != "" {
					fails.fail(addr)
				}
				w.Header().Set("WWW-Authenticate", `Bearer realm="toolsearch-admin"`)
				writeError(w, r, logger, errorf(http.StatusUnauthorized, "unauthorized", "the admin token is required: send Authorization: Bearer <TOOLSEARCH_ADMIN_TOKEN>"))
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// tokenCheck reports whether a presented bearer token is token, compared
// in constant time. An empty token admits nobody.
func tokenCheck(token string) func(presented string) bool {
	want := sha256.Sum256([]byte(token))
	return func(presented string) bool {
		got := sha256.Sum256([]byte(presented))
		return token != "" && subtle.ConstantTimeCompare(got[:], want[:]) == 1
	}
}

func handleSearch(logger *slog.Logger, svc *search.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The service validates the request, against the catalog as well.
		req, err := decode[search.Request](w, r, SearchMaxBodyBytes)
		if err != nil {
			writeError(w, r, logger, err)
			return
		}
		res, err := svc.Search(r.Context(), req, access.CallerFrom(r.Context()))
		if err != nil {
			writeError(w, r, logger, err)
			return
		}
		noteMode(r, string(res.Mode))
		encode(w, http.StatusOK, res)
	})
}

// handleNoop decodes a search request as handleSearch does and answers
// with answer's pre-encoded answer to it, sent as encode sends a
// search's: what a search costs beyond its search.
func handleNoop(logger *slog.Logger, answer func(search.Request) []byte) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, err := decode[search.Request](w, r, SearchMaxBodyBytes)
		if err != nil {
			writeError(w, r, logger, err)
			return
		}
		writeJSON(w, http.StatusOK, answer(req))
	})
}

func handleTemplates(logger *slog.Logger, svc *search.Service) http.Handler {
	type response struct {
		Templates []search.TemplateStatus `json:"templates"`
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ts, err := svc.Templates(access.CallerFrom(r.Context()))
		if err != nil {
			writeError(w, r, logger, err)
			return
		}
		encode(w, http.StatusOK, response{ts})
	})
}

func handleRebuild(logger *slog.Logger, svc *search.Service, page statusPage, writeTimeout time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := svc.Rebuild(r.Context())
		rearm(w, writeTimeout) // a rebuild through a slow provider outlasts the request's deadline
		if err != nil {
			// The caller is an operator holding the admin token: the cause
			// (a catalog problem, a provider error with keys scrubbed) is
			// what they need, and status shows it too. The service has
			// logged it, where it was handled.
			status, serving := http.StatusUnprocessableEntity, "the previous index keeps serving"
			if errors.Is(err, search.ErrEmbedFailed) {
				status = http.StatusServiceUnavailable
			}
			if errors.Is(err, search.ErrDropped) {
				serving = "keywords rank the new catalog"
			}
			writeError(w, r, logger, errorf(status, "rebuild_failed", "rebuild failed, %s: %v", serving, err))
			return
		}
		st := page.read()
		st.Limit(search.AdminStatusListLimit)
		encode(w, http.StatusOK, st)
	})
}

type upstreamStatuser interface{ Status() []upstream.Status }

// statusBody is the status page: the index's status and the upstreams'.
// Status and rebuild answer with it alike.
type statusBody struct {
	search.Status
	Upstreams     []upstream.Status `json:"upstreams"`
	UpstreamCount int               `json:"upstream_count"`
	// CoreDirect are the core tools MCP's tools/list leaves out or lists
	// without their output schema: what a client that never searches
	// cannot call, or reads untyped.
	CoreDirect []catalog.Warning `json:"core_direct_warnings"`
}

type directWarner interface {
	DirectWarnings() []catalog.Warning
}

// statusPage gathers the status page from its sources: the index, and
// when served, the upstreams and MCP's tools/list.
type statusPage struct {
	svc    *search.Service
	ups    upstreamStatuser
	direct directWarner
}

func (p statusPage) read() statusBody {
	res := statusBody{Status: p.svc.Status(), Upstreams: []upstream.Status{}, CoreDirect: []catalog.Warning{}}
	if p.ups != nil {
		res.Upstreams = p.ups.Status()
	}
	res.UpstreamCount = len(res.Upstreams)
	if p.direct != nil {
		res.CoreDirect = append(res.CoreDirect, p.direct.DirectWarnings()...)
	}
	return res
}

// handleStatus serves the status page, open for probes. Its detail
// depends on who reads it: with the admin token, everything (lists up to
// AdminStatusListLimit); without API keys configured, every caller already
// sees every tool, so names are shown (lists up to StatusListLimit); with
// keys but no admin token, a Summary that depends on nothing in the
// catalog.
func handleStatus(svc *search.Service, page statusPage, admin string, trusted proxies, fails *authFailures) http.Handler {
	tokenOK := tokenCheck(admin)
	// isAdmin is whether r bears the admin token. Status answers
	// everyone, probes too, so an address out of its allowance of
	// failures is answered as if it bore none, and a token that is
	// neither the admin's nor an API key counts as a failure: the admin's
	// answer differs from anyone else's, which would otherwise tell a
	// right guess.
	isAdmin := func(r *http.Request) bool {
		if admin == "" {
			return false
		}
		token, addr, refused := fails.guard(r, trusted)
		if token == "" || refused != nil {
			return false
		}
		if tokenOK(token) {
			return true
		}
		// Without keys any token but the admin's is a wrong guess; with
		// keys, one that is no key (not one refused before the first
		// index, which knows no keys yet).
		if _, err := svc.Authenticate(token); errors.Is(err, access.ErrUnauthorized) || err == nil && !svc.AuthRequired() {
			fails.fail(addr)
		}
		return false
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		st := page.read()
		switch {
		case isAdmin(r):
			st.Limit(search.AdminStatusListLimit)
		case svc.AuthRequired():
			encode(w, http.StatusOK, st.Summarize())
			return
		default:
			st.Limit(search.StatusListLimit)
		}
		encode(w, http.StatusOK, st)
	})
}

func handleHealthz() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		encode(w, http.StatusOK, map[string]string{"status": "ok"})
	})
}

func handleReadyz(svc *search.Service, draining *atomic.Bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if draining != nil && draining.Load() {
			writeError(w, r, nil, errorf(http.StatusServiceUnavailable, "draining", "shutting down: finishing in-flight requests"))
			return
		}
		if svc.Current() == nil {
			writeError(w, r, nil, search.ErrNotReady)
			return
		}
		encode(w, http.StatusOK, map[string]any{"ready": true})
	})
}

// handleServers lists the servers the caller may see, with tool counts.
func handleServers(logger *slog.Logger, svc *search.Service) http.Handler {
	type response struct {
		Servers []search.ServerCount `json:"servers"`
		Tools   int                  `json:"tools"`
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		servers, err := svc.Servers(access.CallerFrom(r.Context()), "")
		if err != nil {
			writeError(w, r, logger, err)
			return
		}
		res := response{Servers: servers}
		for _, s := range servers {
			res.Tools += s.Tools
		}
		encode(w, http.StatusOK, res)
	})
}

// handleCatalog reports the caller's tools with their lint findings and
// self-retrieval misses: where an operator fixes a description.
func handleCatalog(logger *slog.Logger, svc *search.Service, writeTimeout time.Duration) http.Handler {
	// One report at a time, written before the next is made: a report on
	// 100,000 tools allocates about 400 MB and answers 28, and 40 asked at
	// once held a 2 GiB pod at its memory limit (past 5 GB without one).
	// Callers wait their turn for as long as their request lasts.
	turn := make(chan struct{}, 1)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		servers := r.URL.Query()["server"] // checked by the route's query middleware
		if len(servers) > maxCatalogServers {
			writeError(w, r, logger, errorf(http.StatusBadRequest, "too_many_servers", "at most %d server parameters", maxCatalogServers))
			return
		}
		select {
		case turn <- struct{}{}:
			defer func() { <-turn }()
		case <-r.Context().Done():
			return // the caller went away while it waited
		}
		rep, err := inspect.Catalog(r.Context(), svc, access.CallerFrom(r.Context()), servers)
		rearm(w, writeTimeout) // its turn may have come after the request's deadline
		if err != nil {
			writeError(w, r, logger, err)
			return
		}
		encode(w, http.StatusOK, rep)
		if len(rep.Tools) >= reportReturnTools {
			// What the report allocated (its tables, its JSON: 2 KiB a tool
			// and three times the text) stays with the process once freed,
			// as a build's would, until the scavenger comes round: 100,000
			// tools kept 225 MiB, and the rebuild after it peaked 80 MiB
			// higher. Give it back, as a build does, before the next
			// report's turn; the caller has its answer already.
			if f, ok := w.(http.Flusher); ok {
				f.Flush()
			}
			debug.FreeOSMemory()
		}
	})
}

// reportReturnTools is the smallest report whose memory is given back
// once written: below it the collection would cost more than the report,
// for a few MiB. A variable, for a test.
var reportReturnTools = 1000

// query refuses a request whose query string queryParams refuses.
func query(logger *slog.Logger, known ...string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if _, err := queryParams(r, known...); err != nil {
				writeError(w, r, logger, err)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// credentialParams are the query parameters clients put a key in.
var credentialParams = map[string]bool{"api_key": true, "apikey": true, "api-key": true, "key": true, "token": true, "access_token": true, "auth": true, "authorization": true, "bearer": true}

// queryParams is the request's query, refused when it holds a parameter
// not in known: a misspelt one is an error, not silently ignored. A known
// name ending in "*" may be repeated; any other given twice is refused,
// since only one would count. An empty value is refused too: "?tool=" is
// more likely an unset variable than a wish for every tool.
func queryParams(r *http.Request, known ...string) (url.Values, error) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		// r.URL.Query() would drop what it cannot parse and answer for the
		// rest as if the caller had asked for less.
		return nil, errorf(http.StatusBadRequest, "malformed_query", "the query string is not valid URL encoding")
	}
	for k, vs := range q {
		switch {
		case slices.Contains(known, k+"*"):
		case slices.Contains(known, k):
			if len(vs) > 1 {
				return nil, errorf(http.StatusBadRequest, "repeated_parameter", "query parameter %s is given %d times; it takes one value", redact.Echo(k), len(vs))
			}
		default:
			takes := "this endpoint takes none"
			if len(known) > 0 {
				takes = "known: " + strings.Join(known, ", ")
			}
			if credentialParams[strings.ToLower(k)] {
				// Served anyway, a key there would be ignored (a 401, or
				// anonymous without keys), and URLs end up in proxies' logs.
				takes = "an API key goes in the Authorization header (Bearer), never in the URL"
			}
			return nil, errorf(http.StatusBadRequest, "unknown_parameter", "unknown query parameter %s; %s", redact.Echo(k), strings.ReplaceAll(takes, "*", ""))
		}
		if slices.Contains(vs, "") {
			return nil, errorf(http.StatusBadRequest, "empty_parameter", "query parameter %s is empty; leave it out instead", redact.Echo(k))
		}
	}
	return q, nil
}

// maxCatalogServers bounds the servers one catalog request names.
const maxCatalogServers = 64

// feedbackRequest reports the tools a caller used after a search.
// feedbackRequest names the search by search_id, as its answer does; id
// is the name it had first, still taken.
type feedbackRequest struct {
	SearchID string   `json:"search_id"`
	ID       string   `json:"id"`
	Used     []string `json:"used"`
}

// maxFeedbackTools bounds a feedback's list; more than a search returns
// cannot count anyway.
const maxFeedbackTools = 50

// handleFeedback takes {"search_id","used"}: the tools the caller used of
// those the search returned. They teach the index (learning from use); a tool
// the search did not return teaches nothing, and is counted as ignored.
func handleFeedback(logger *slog.Logger, svc *search.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, err := decode[feedbackRequest](w, r, MaxBodyBytes)
		if err != nil {
			writeError(w, r, logger, err)
			return
		}
		id := cmp.Or(req.SearchID, req.ID)
		switch {
		case req.SearchID != "" && req.ID != "":
			err = errorf(http.StatusBadRequest, "conflicting_fields", `give "search_id" or "id" (its earlier name), not both`)
		case id == "" || len(id) > 64:
			err = errorf(http.StatusBadRequest, "invalid_request", `"search_id" must be the search_id of a search answer, at most 64 bytes`)
		case len(req.Used) == 0 || len(req.Used) > maxFeedbackTools:
			err = errorf(http.StatusBadRequest, "invalid_request", `"used" must name 1 to %d tools, got %d`, maxFeedbackTools, len(req.Used))
		case slices.ContainsFunc(req.Used, func(u string) bool { return u == "" || len(u) > 512 }):
			err = errorf(http.StatusBadRequest, "invalid_request", `"used" holds an empty tool name, or one over 512 bytes`)
		}
		if err == nil {
			var learned int
			var ignored []string
			learned, ignored, err = svc.Feedback(r.Context(), access.CallerFrom(r.Context()), id, req.Used)
			if err == nil {
				encode(w, http.StatusOK, struct {
					Learned      int      `json:"learned"`
					Ignored      int      `json:"ignored"`
					IgnoredTools []string `json:"ignored_tools,omitempty"`
				}{learned, len(ignored), ignored})
				return
			}
		}
		writeError(w, r, logger, err)
	})
}

// maxLearnedList bounds GET /mcp/tool-search/learned without a tool.
const maxLearnedList = 100

// handleLearned shows what was learned: for ?tool=server/name, or for
// every tool with something learned (up to maxLearnedList), through the
// caller's view.
func handleLearned(logger *slog.Logger, svc *search.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, err := svc.Learned(access.CallerFrom(r.Context()), r.URL.Query().Get("tool"), maxLearnedList)
		if err != nil {
			writeError(w, r, logger, err)
			return
		}
		encode(w, http.StatusOK, struct {
			Tools []search.LearnedTool `json:"tools"`
		}{got})
	})
}

// handleResetLearned forgets what was learned about ?tool=server/name, or
// everything without it, and rebuilds (admin token).
func handleResetLearned(logger *slog.Logger, svc *search.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tool, err := svc.ResetLearned(r.Context(), r.URL.Query().Get("tool"))
		if err != nil {
			writeError(w, r, logger, err)
			return
		}
		encode(w, http.StatusOK, struct {
			Reset string `json:"reset"`
		}{cmp.Or(tool, "*")})
	})
}

// rearm gives the answer a handler is about to write d from now: the
// request's write deadline (writeWithin) runs from its start, which a
// handler that works or waits for long has used up.
func rearm(w http.ResponseWriter, d time.Duration) {
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(d))
}
