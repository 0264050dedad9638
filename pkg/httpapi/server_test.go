package httpapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolsearch/toolsearch/pkg/access"
	"github.com/toolsearch/toolsearch/pkg/config"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolsearch/toolsearch/pkg/catalog"
	"github.com/toolsearch/toolsearch/pkg/embedding"
	"github.com/toolsearch/toolsearch/pkg/search"
	"github.com/toolsearch/toolsearch/pkg/upstream"
)

// testSetup is the default catalog with a core tool, a template and,
// when keys is set, two API keys: "key-all" and "key-gh" (github only).
func testSetup(tb testing.TB, keys bool) *search.Setup {
	tb.Helper()
	cat, err := catalog.Default()
	if err != nil {
		tb.Fatal(err)
	}
	s := &search.Setup{Catalog: cat, Core: []string{"get_platform_info"},
		Templates: map[string]config.Template{
			"release":  {Description: "Ship", Tools: []string{"merge_pull_request", "create_release"}},
			"announce": {Description: "Tell the team", Tools: []string{"slack/post_message"}},
		}}
	if keys {
		s.Keys = []access.Key{
			{Name: "all", Hash: sha256.Sum256([]byte("key-all"))},
			{Name: "gh", Hash: sha256.Sum256([]byte("key-gh")), Visibility: access.Visibility{Servers: []string{"github"}}},
		}
	}
	return s
}

type serverOpts struct {
	build, keys bool
	admin       string
	load        func(context.Context) (*search.Setup, error)
	learning    *search.Learning
}

func newTestServerWith(tb testing.TB, o serverOpts) (http.Handler, *search.Service) {
	tb.Helper()
	reg := prometheus.NewRegistry()
	if o.load == nil {
		o.load = func(context.Context) (*search.Setup, error) { return testSetup(tb, o.keys), nil }
	}
	svc := search.New(search.Config{Load: o.load, Embedder: embedding.NewLocal(256), Registerer: reg, Version: "test", Learning: o.learning})
	if o.build {
		// Not tb.Context(): under -fuzz, each worker process runs this
		// setup, and the fuzz deadline may already be close.
		if _, err := svc.Build(context.Background(), testSetup(tb, o.keys)); err != nil {
			tb.Fatal(err)
		}
	}
	return withMetrics(NewServer(svc, Options{Registerer: reg, AdminToken: o.admin}), reg), svc
}

// withMetrics serves the metrics listener's /metrics beside api, so a
// test reads both through one handler.
func withMetrics(api http.Handler, g prometheus.Gatherer) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", NewMetricsServer(g, nil, nil, nil))
	mux.Handle("/", api)
	return mux
}

// TestMetricsApart: the API's listener does not serve /metrics; the
// metrics listener serves it (GET and HEAD) and the probes, which answer
// there as on the API's listener, and nothing else.
func TestMetricsApart(t *testing.T) {
	reg := prometheus.NewRegistry()
	svc := search.New(search.Config{Embedder: embedding.NewLocal(64), Registerer: reg})
	var draining atomic.Bool
	api, metrics := NewServer(svc, Options{Registerer: reg, Draining: &draining}), NewMetricsServer(reg, nil, svc, &draining)
	tests := []struct {
		h            http.Handler
		method, path string
		want         int
		code         string // the error's, where one is wanted
	}{
		{api, "GET", "/metrics", 404, "not_found"},
		{metrics, "GET", "/metrics", 200, ""},
		{metrics, "HEAD", "/metrics", 200, ""},
		{metrics, "GET", "/healthz", 200, ""},
		{metrics, "GET", "/readyz", 503, "not_ready"},
		{metrics, "GET", "/healthz?verbose=1", 400, "unknown_parameter"},
		{metrics, "GET", "/metrics?x=1", 400, "unknown_parameter"},
		{metrics, "GET", "/metrics?%zz", 400, "malformed_query"},
		{metrics, "GET", "/mcp/tool-search/status", 404, "not_found"},
		{metrics, "POST", "/metrics", 405, "method_not_allowed"},
		{metrics, "GET", "/heal%74hz", 200, ""},
		{metrics, "GET", "/metrics%2F", 404, "not_found"},
	}
	check := func() {
		t.Helper()
		for _, tt := range tests {
			rec := do(tt.h, tt.method, tt.path, "", "")
			if rec.Code != tt.want || (tt.code != "" && !strings.Contains(rec.Body.String(), `{"error":{"code":"`+tt.code+`"`)) {
				t.Errorf("%s %s = %d %s, want %d %s", tt.method, tt.path, rec.Code, rec.Body.String(), tt.want, tt.code)
			}
		}
	}
	check()
	if _, err := svc.Build(t.Context(), testSetup(t, false)); err != nil {
		t.Fatal(err)
	}
	tests[4].want, tests[4].code = 200, ""
	check()
	draining.Store(true) // both listeners' readiness fails for the drain
	tests[4].want, tests[4].code = 503, "draining"
	tests = append(tests, struct {
		h            http.Handler
		method, path string
		want         int
		code         string
	}{api, "GET", "/readyz", 503, "draining"})
	check()
}

// TestContentEncoding: a body in a coding the service does not decode is
// a 415 naming it, not read as if it were plain (a gzip body would be
// "malformed JSON", a plain one labelled gzip would be searched).
func TestContentEncoding(t *testing.T) {
	h, _ := newTestServer(t, true)
	for _, tt := range []struct {
		path, coding string
		want         int
	}{
		{"/mcp/tool-search", "gzip", 415},
		{"/mcp/tool-search", "GZIP", 415},
		{"/mcp/tool-search", "identity, br", 415},
		{"/mcp/tool-search/feedback", "deflate", 415},
		{"/mcp/tool-search", "identity", 200},
		{"/mcp/tool-search", "Identity", 200},
	} {
		req := httptest.NewRequest("POST", tt.path, strings.NewReader(`{"query":"list issues"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Content-Encoding", tt.coding)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		var got errorResponse
		_ = json.Unmarshal(rec.Body.Bytes(), &got)
		switch {
		case rec.Code != tt.want:
			t.Errorf("POST %s with Content-Encoding %q = %d %s, want %d", tt.path, tt.coding, rec.Code, rec.Body, tt.want)
		case tt.want == 415 && (got.Error.Code != "unsupported_media_type" || !strings.Contains(got.Error.Message, "Content-Encoding")):
			t.Errorf("Content-Encoding %q: error %+v, want unsupported_media_type naming Content-Encoding", tt.coding, got.Error)
		case tt.want == 415 && rec.Header().Get("Accept-Encoding") != "identity":
			t.Errorf("Content-Encoding %q: Accept-Encoding = %q, want identity (RFC 9110 15.5.16)", tt.coding, rec.Header().Get("Accept-Encoding"))
		}
	}
}

func newTestServer(tb testing.TB, build bool) (http.Handler, *search.Service) {
	return newTestServerWith(tb, serverOpts{build: build})
}

func do(h http.Handler, method, path, contentType, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if contentType != "" {
		// Each line its own field: a Content-Type given twice.
		req.Header["Content-Type"] = strings.Split(contentType, "\n")
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

type errorResponse struct {
	Error struct {
		Code      string `json:"code"`
		Message   string `json:"message"`
		RequestID string `json:"request_id"`
	} `json:"error"`
}

func TestSearchBadRequests(t *testing.T) {
	h, _ := newTestServer(t, true)
	const js = "application/json"
	tests := []struct {
		name        string
		method      string
		path        string
		contentType string
		body        string
		wantStatus  int
		wantCode    string
		wantInMsg   string
	}{
		{"malformed", "POST", "/mcp/tool-search", js, `{"query":`, 400, "malformed_json", ""},
		{"not json", "POST", "/mcp/tool-search", js, `query=x`, 400, "malformed_json", ""},
		{"truncated", "POST", "/mcp/tool-search", js, `{"query":"x"`, 400, "malformed_json", "truncated"},
		{"array body", "POST", "/mcp/tool-search", js, `["x"]`, 400, "wrong_type", "JSON object"},
		{"query wrong type", "POST", "/mcp/tool-search", js, `{"query":5}`, 400, "wrong_type", `"query" must be a string`},
		{"top_k wrong type", "POST", "/mcp/tool-search", js, `{"query":"x","top_k":"3"}`, 400, "wrong_type", `"top_k" must be an integer`},
		{"top_k fraction", "POST", "/mcp/tool-search", js, `{"query":"x","top_k":2.5}`, 400, "wrong_type", `"top_k" must be an integer, got JSON number 2.5`},
		{"an item of the wrong type", "POST", "/mcp/tool-search", js, `{"query":"x","servers":["github",1]}`, 400, "wrong_type", `field "servers[1]" must be a string, got JSON number`},
		{"byte order mark", "POST", "/mcp/tool-search", js, "\uFEFF" + `{"query":"x"}`, 400, "malformed_json", "byte order mark"},
		{"unknown field", "POST", "/mcp/tool-search", js, `{"query":"x","topk":3}`, 400, "unknown_field", `"topk"`},
		{"field in another case", "POST", "/mcp/tool-search", js, `{"QUERY":"x"}`, 400, "unknown_field", `did you mean "query"`},
		{"another API's key", "POST", "/mcp/tool-search", js, `{"query":"x","limit":3}`, 400, "unknown_field", `"limit" is unknown; it takes query, messages, top_k, mode`},
		{"long unknown key", "POST", "/mcp/tool-search", js, `{"query":"x","` + strings.Repeat("k", 5000) + `":3}`, 400, "unknown_field", `"kkkk`},
		{"field in mixed case", "POST", "/mcp/tool-search", js, `{"query":"x","Top_K":3}`, 400, "unknown_field", `"Top_K"`},
		{"duplicate field", "POST", "/mcp/tool-search", js, `{"query":"a","query":"b"}`, 400, "duplicate_field", `"query"`},
		{"duplicate across case", "POST", "/mcp/tool-search", js, `{"query":"a","Query":"b"}`, 400, "unknown_field", `"Query"`},
		{"empty query", "POST", "/mcp/tool-search", js, `{"query":""}`, 400, "empty_query", ""},
		{"blank query", "POST", "/mcp/tool-search", js, `{"query":"  \t "}`, 400, "empty_query", ""},
		{"missing query", "POST", "/mcp/tool-search", js, `{"top_k":3}`, 400, "empty_query", ""},
		{"top_k zero", "POST", "/mcp/tool-search", js, `{"query":"x","top_k":0}`, 400, "top_k_out_of_range", "between 1 and 50"},
		{"top_k negative", "POST", "/mcp/tool-search", js, `{"query":"x","top_k":-1}`, 400, "top_k_out_of_range", ""},
		{"top_k huge", "POST", "/mcp/tool-search", js, `{"query":"x","top_k":1000000000}`, 400, "top_k_out_of_range", ""},
		{"top_k overflow", "POST", "/mcp/tool-search", js, `{"query":"x","top_k":1e30}`, 400, "wrong_type", ""},
		{"top_k of 5,000 digits", "POST", "/mcp/tool-search", js, `{"query":"x","top_k":1` + strings.Repeat("0", 5000) + `}`, 400, "wrong_type", "0000…"},
		{"null body", "POST", "/mcp/tool-search", js, `null`, 400, "wrong_type", "got JSON null"},
		{"bad mode", "POST", "/mcp/tool-search", js, `{"query":"x","mode":"magic"}`, 400, "invalid_mode", ""},
		{"bad format", "POST", "/mcp/tool-search", js, `{"query":"x","format":"cohere"}`, 400, "invalid_format", "openai"},
		{"list without scope", "POST", "/mcp/tool-search", js, `{"operation":"list"}`, 400, "missing_scope", ""},
		{"list with a query", "POST", "/mcp/tool-search", js, `{"operation":"list","servers":["github"],"query":"issues"}`, 400, "conflicting_fields", "leave out"},
		{"template with a query", "POST", "/mcp/tool-search", js, `{"template":"release","query":"deploy"}`, 400, "conflicting_fields", "manifest"},
		{"select naming nothing", "POST", "/mcp/tool-search", js, `{"query":"select: ,"}`, 400, "empty_query", "names no tools"},
		{"tampered cursor", "POST", "/mcp/tool-search", js, `{"operation":"list","servers":["github"],"cursor":"AAAA"}`, 400, "invalid_cursor", ""},
		{"unknown template", "POST", "/mcp/tool-search", js, `{"template":"nope"}`, 404, "unknown_template", "release"},
		{"servers wrong type", "POST", "/mcp/tool-search", js, `{"query":"x","servers":"github"}`, 400, "wrong_type", `"servers" must be an array`},
		{"trailing data", "POST", "/mcp/tool-search", js, `{"query":"x"} {}`, 400, "malformed_json", "after"},
		{"empty body", "POST", "/mcp/tool-search", js, ``, 400, "empty_body", ""},
		{"invalid utf8", "POST", "/mcp/tool-search", js, "{\"query\":\"\xff\xfe\"}", 400, "invalid_utf8", ""},
		{"latin-1 body, labelled", "POST", "/mcp/tool-search", "application/json; charset=ISO-8859-1", "{\"query\":\"caf\xe9\"}", 400, "invalid_utf8", `charset "ISO-8859-1"`},
		{"message part a number", "POST", "/mcp/tool-search", js, `{"messages":[{"role":"user","content":[5]}]}`, 400, "invalid_messages", "part 0"},
		{"message key misspelt", "POST", "/mcp/tool-search", js, `{"messages":[{"role":"user","contnet":"x"}]}`, 400, "invalid_messages", `did you mean "content"`},
		{"message parts too long", "POST", "/mcp/tool-search", js, `{"messages":[{"role":"user","content":[{"type":"text","text":"` + strings.Repeat("a ", 17000) + `"}]}]}`, 413, "input_too_large", ""},
		{"nul in query", "POST", "/mcp/tool-search", js, `{"query":"a\u0000b"}`, 400, "invalid_query", "NUL"},
		{"long query", "POST", "/mcp/tool-search", js, `{"query":"` + strings.Repeat("a ", 17000) + `"}`, 413, "input_too_large", ""},
		{"body too large", "POST", "/mcp/tool-search", js, `{"query":"` + strings.Repeat("a", SearchMaxBodyBytes) + `"}`, 413, "body_too_large", ""},
		{"feedback body too large", "POST", "/mcp/tool-search/feedback", js, `{"search_id":"` + strings.Repeat("a", MaxBodyBytes) + `"}`, 413, "body_too_large", ""},
		{"wrong content type", "POST", "/mcp/tool-search", "text/plain", `{"query":"x"}`, 415, "unsupported_media_type", "text/plain"},
		{"form content type", "POST", "/mcp/tool-search", "application/x-www-form-urlencoded", `{"query":"x"}`, 415, "unsupported_media_type", ""},
		{"content type twice", "POST", "/mcp/tool-search", "application/json\napplication/json", `{"query":"x"}`, 415, "unsupported_media_type", "given 2 times"},
		{"feedback, content type twice", "POST", "/mcp/tool-search/feedback", "application/json\ntext/plain", `{"search_id":"x"}`, 415, "unsupported_media_type", "given 2 times"},
		{"escaped slash", "POST", "/mcp%2Ftool-search", js, `{"query":"x"}`, 404, "not_found", "/mcp%2Ftool-search"},
		{"wrong method", "GET", "/mcp/tool-search", "", ``, 405, "method_not_allowed", "GET"},
		{"status wrong method", "DELETE", "/mcp/tool-search/status", "", ``, 405, "method_not_allowed", ""},
		{"unknown route", "GET", "/nope", "", ``, 404, "not_found", "/nope"},
		{"catalog, empty server", "GET", "/mcp/tool-search/catalog?server=", "", ``, 400, "empty_parameter", `"server"`},
		{"status, repeated unknown parameter", "GET", "/mcp/tool-search/status?x=1&x=2", "", ``, 400, "unknown_parameter", "takes none"},
		{"deeply nested", "POST", "/mcp/tool-search", js, `{"query":"x","top_k":` + strings.Repeat("[", 5000) + strings.Repeat("]", 5000) + `}`, 400, "wrong_type", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := do(h, tt.method, tt.path, tt.contentType, tt.body)
			if rec.Code != tt.wantStatus {
				t.Errorf("%s %s %.40q = %d, want %d; body %s", tt.method, tt.path, tt.body, rec.Code, tt.wantStatus, rec.Body)
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type = %q, want application/json", ct)
			}
			var got errorResponse
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
				t.Fatalf("error body is not JSON: %v: %s", err, rec.Body)
			}
			if got.Error.Code != tt.wantCode || !strings.Contains(got.Error.Message, tt.wantInMsg) || got.Error.Message == "" {
				t.Errorf("error = %+v, want code %q with %q in the message", got.Error, tt.wantCode, tt.wantInMsg)
			}
			if got.Error.RequestID == "" {
				t.Error("error has no request_id")
			}
			if len(got.Error.Message) > 400 {
				t.Errorf("message of %d bytes: input is echoed unbounded", len(got.Error.Message))
			}
			// Bad input loses nothing: the next good request is answered.
			if ok := do(h, "POST", "/mcp/tool-search", "", `{"query":"list issues"}`); ok.Code != 200 {
				t.Errorf("good request after bad one = %d: %s", ok.Code, ok.Body)
			}
		})
	}
}

// brokenCollector is a metric family whose collection fails.
type brokenCollector struct{ desc *prometheus.Desc }

func (b brokenCollector) Describe(ch chan<- *prometheus.Desc) { ch <- b.desc }
func (b brokenCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.NewInvalidMetric(b.desc, errors.New("broken"))
}

// TestMetricsSurviveABrokenCollector: one family that fails to collect
// is logged, and every other is still served.
func TestMetricsSurviveABrokenCollector(t *testing.T) {
	reg := prometheus.NewRegistry()
	good := prometheus.NewCounter(prometheus.CounterOpts{Name: "toolsearch_test_good_total", Help: "A family that collects."})
	good.Inc()
	reg.MustRegister(good, brokenCollector{prometheus.NewDesc("toolsearch_test_broken", "A family that fails.", nil, nil)})
	var logs bytes.Buffer
	h := NewMetricsServer(reg, slog.New(slog.NewJSONHandler(&logs, nil)), nil, nil)
	rec := do(h, "GET", "/metrics", "", "")
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "toolsearch_test_good_total 1") {
		t.Errorf("/metrics with a broken family: %d %.300s; want 200 with the others", rec.Code, rec.Body)
	}
	if !strings.Contains(logs.String(), "broken") || !strings.Contains(logs.String(), `"level":"ERROR"`) {
		t.Errorf("the broken family was not logged as an error: %s", logs.String())
	}
}

// TestAnswerHeaders: no answer may be stored by a cache or sniffed as
// another type, errors and both listeners included; the console's static
// files keep their own revalidation.
func TestAnswerHeaders(t *testing.T) {
	h, svc := newTestServer(t, true)
	metrics := NewMetricsServer(prometheus.NewRegistry(), nil, svc, nil)
	tests := []struct {
		h            http.Handler
		method, path string
		body         string
		cache        string
	}{
		{h, "POST", "/mcp/tool-search", `{"query":"merge the pull request"}`, "no-store"},
		{h, "POST", "/mcp/tool-search", `{"query":`, "no-store"},
		{h, "GET", "/mcp/tool-search/status", "", "no-store"},
		{h, "GET", "/mcp/tool-search/catalog", "", "no-store"},
		{h, "GET", "/nope", "", "no-store"},
		{h, "PUT", "/mcp/tool-search", "", "no-store"},
		{h, "GET", "/console/", "", "no-cache"},
		{metrics, "GET", "/readyz", "", "no-store"},
		{metrics, "GET", "/metrics", "", "no-store"},
	}
	for _, tt := range tests {
		rec := do(tt.h, tt.method, tt.path, "", tt.body)
		if got := rec.Header().Values("Cache-Control"); len(got) != 1 || got[0] != tt.cache {
			t.Errorf("%s %s (%d): Cache-Control %q, want %q", tt.method, tt.path, rec.Code, got, tt.cache)
		}
		if got := rec.Header().Values("X-Content-Type-Options"); len(got) != 1 || got[0] != "nosniff" {
			t.Errorf("%s %s (%d): X-Content-Type-Options %q, want nosniff", tt.method, tt.path, rec.Code, got)
		}
	}
}

// TestHeldBackErrorsKeepAnswerHeaders: a plain-text error the MCP
// handler writes, answered as JSON-RPC instead, is no-store and nosniff
// as every answer is.
func TestHeldBackErrorsKeepAnswerHeaders(t *testing.T) {
	_, svc := newTestServer(t, true)
	h := NewServer(svc, Options{Registerer: prometheus.NewRegistry(), MCP: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "Bad Request: no session", http.StatusBadRequest)
	})})
	rec := do(h, "POST", "/mcp", "application/json", `{}`)
	if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), `"jsonrpc":"2.0"`) {
		t.Fatalf("%d %s, want a JSON-RPC 400", rec.Code, rec.Body)
	}
	if rec.Header().Get("X-Content-Type-Options") != "nosniff" || rec.Header().Get("Cache-Control") != "no-store" {
		t.Errorf("headers %v, want no-store and nosniff", rec.Header())
	}
}

// TestConsoleErrors: the console's files answer every error as the API
// does, in JSON, where the file server wrote plain text; what is not an
// error is the file server's own (a range of a file, 206).
func TestConsoleErrors(t *testing.T) {
	_, svc := newTestServer(t, true)
	h := NewServer(svc, Options{Registerer: prometheus.NewRegistry()})
	tests := []struct {
		name, path, header, value string
		want                      int
		code                      string
	}{
		{"a range past the end", "/console/console.js", "Range", "bytes=999999-", 416, "range_not_satisfiable"},
		{"a range of a unit it does not read", "/console/console.js", "Range", "pages=1-2", 416, "range_not_satisfiable"}, // net/http refuses it
		{"a precondition that fails", "/console/console.js", "If-Match", `"nope"`, 412, "precondition_failed"},
		{"a range", "/console/console.js", "Range", "bytes=0-9", 206, ""},
		{"no such file", "/console/nope.js", "", "", 404, "not_found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, tt.path, nil)
			if tt.header != "" {
				r.Header.Set(tt.header, tt.value)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			if rec.Code != tt.want {
				t.Fatalf("%d %.200s, want %d", rec.Code, rec.Body, tt.want)
			}
			if tt.code == "" {
				return
			}
			if got := decodeError(t, rec); got.Error.Code != tt.code || rec.Header().Get("Content-Type") != "application/json" || rec.Header().Get("Cache-Control") != "no-store" {
				t.Errorf("%s %q (Cache-Control %q), want a JSON error %s, no-store", rec.Header().Get("Content-Type"), rec.Body, rec.Header().Get("Cache-Control"), tt.code)
			}
		})
	}
}

// TestEscapedPaths: a path is routed as it reads decoded, whatever a
// client escaped (RFC 3986: an escaped unreserved character is the
// character), and counted under its route; an escaped slash is no
// separator, so it matches nothing, and the 404 names the path as sent.
func TestEscapedPaths(t *testing.T) {
	h, _ := newTestServer(t, true)
	tests := []struct {
		method, path string
		want         int
		inBody       string
	}{
		{"POST", "/mcp/tool%2Dsearch", 200, `"tools":[`},
		{"POST", "/%6Dcp/tool-search", 200, `"tools":[`},
		{"GET", "/mcp/tool-search/st%61tus", 200, `"ready":true`},
		{"GET", "/mcp/tool%2Dsearch", 405, "method GET is not allowed on /mcp/tool-search"},
		{"POST", "/mcp%2Ftool-search", 404, "no route for POST /mcp%2Ftool-search"},
		{"POST", "/mcp%2ftool-search", 404, "no route for POST /mcp%2ftool-search"},
		{"POST", "/mcp/tool-search%2F", 404, "no route for POST /mcp/tool-search%2F"},
		{"GET", "/consol%65/", 200, "<!doctype html>"},
		{"GET", "/consol%65/console.js", 200, "function"},
		{"GET", "/consol%65/nope.js", 404, `"code":"not_found"`},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			rec := do(h, tt.method, tt.path, "", `{"query":"merge the pull request"}`)
			if rec.Code != tt.want || !strings.Contains(rec.Body.String(), tt.inBody) {
				t.Errorf("%s %s = %d %.300s; want %d with %s", tt.method, tt.path, rec.Code, rec.Body, tt.want, tt.inBody)
			}
		})
	}
}

func TestSearchOK(t *testing.T) {
	h, svc := newTestServer(t, true)
	rec := do(h, "POST", "/mcp/tool-search", "application/json; charset=utf-8", `{"query":"merge the approved pull request","top_k":3,"include_core":false}`)
	if rec.Code != 200 {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	var got struct {
		Tools []struct {
			Name, Server, Description string
			Score                     float64
		}
		Mode         string
		TookMS       *float64 `json:"took_ms"`
		IndexVersion string   `json:"index_version"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Tools) != 3 || got.Tools[0].Name != "merge_pull_request" || got.Tools[0].Server != "github" || got.Tools[0].Description == "" {
		t.Errorf("tools = %+v, want 3 with github/merge_pull_request first", got.Tools)
	}
	for i := 1; i < len(got.Tools); i++ {
		if got.Tools[i].Score > got.Tools[i-1].Score {
			t.Errorf("tools not best first: %+v", got.Tools)
		}
	}
	if got.Mode != "hybrid" || got.TookMS == nil || got.IndexVersion != svc.Status().IndexVersion {
		t.Errorf("mode %q took_ms %v index_version %q", got.Mode, got.TookMS, got.IndexVersion)
	}
	// Default top_k is 10, plus the core tool; no Content-Type is accepted as JSON.
	rec = do(h, "POST", "/mcp/tool-search", "", `{"query":"files"}`)
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || len(got.Tools) != search.DefaultTopK+1 {
		t.Errorf("default top_k: %d tools, err %v", len(got.Tools), err)
	}
}

// TestWholeConversation: a router sends its conversation as its model's
// API holds it, a screenshot and tools' long outputs included, and is
// answered on its newest ask.
func TestWholeConversation(t *testing.T) {
	h, _ := newTestServer(t, true)
	screenshot := "data:image/png;base64," + strings.Repeat("iVBORw0KGgo", 40_000) // 440 KB
	output := strings.Repeat("total 4096 drwxr-xr-x 2 root root 4096 src ", 2_500) // 107 KB
	turns := []map[string]any{
		{"role": "system", "content": "You are a coding assistant."},
		{"role": "user", "content": []map[string]any{{"type": "text", "text": "what is on my screen?"}, {"type": "image_url", "image_url": map[string]string{"url": screenshot}}}},
		{"role": "assistant", "content": "A terminal listing the repository."},
		{"role": "tool", "tool_call_id": "call_1", "content": output},
		{"role": "tool", "tool_call_id": "call_2", "content": output},
		{"role": "user", "content": "merge the approved pull request"},
	}
	body, err := json.Marshal(map[string]any{"messages": turns, "top_k": 1, "include_core": false})
	if err != nil {
		t.Fatal(err)
	}
	if len(body) <= MaxBodyBytes || len(body) > SearchMaxBodyBytes {
		t.Fatalf("a body of %d bytes tests nothing", len(body))
	}
	rec := do(h, "POST", "/mcp/tool-search", "", string(body))
	var got struct{ Tools []struct{ Name string } }
	if err := json.Unmarshal(rec.Body.Bytes(), &got); rec.Code != 200 || err != nil || len(got.Tools) != 1 || got.Tools[0].Name != "merge_pull_request" {
		t.Errorf("a conversation of %d bytes = %d: %.300s", len(body), rec.Code, rec.Body)
	}
}

func TestNotReady(t *testing.T) {
	h, svc := newTestServer(t, false)
	for _, path := range []string{"/readyz"} {
		if rec := do(h, "GET", path, "", ""); rec.Code != 503 || !strings.Contains(rec.Body.String(), "not_ready") {
			t.Errorf("GET %s before build = %d %s, want 503 not_ready", path, rec.Code, rec.Body)
		}
	}
	if rec := do(h, "POST", "/mcp/tool-search", "", `{"query":"x"}`); rec.Code != 503 || rec.Header().Get("Retry-After") != "1" {
		t.Errorf("search before build = %d, Retry-After %q; want 503, 1", rec.Code, rec.Header().Get("Retry-After"))
	}
	if rec := do(h, "GET", "/healthz", "", ""); rec.Code != 200 {
		t.Errorf("healthz before build = %d, want 200", rec.Code)
	}
	var st map[string]any
	rec := do(h, "GET", "/mcp/tool-search/status", "", "")
	if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil || st["ready"] != false {
		t.Errorf("status before build = %s", rec.Body)
	}
	if _, err := svc.Build(t.Context(), testSetup(t, false)); err != nil {
		t.Fatal(err)
	}
	if rec := do(h, "GET", "/readyz", "", ""); rec.Code != 200 {
		t.Errorf("readyz after build = %d", rec.Code)
	}
}

func TestStatusFields(t *testing.T) {
	h, _ := newTestServer(t, true)
	rec := do(h, "GET", "/mcp/tool-search/status", "", "")
	var st map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"ready", "mode", "degraded", "size", "built_at", "build_duration_ms", "last_error", "last_error_at", "next_retry_at",
		"embedder", "catalog", "core", "templates", "auth_keys", "memory_bytes", "version", "index_version"} {
		if _, ok := st[key]; !ok {
			t.Errorf("status lacks %q: %s", key, rec.Body)
		}
	}
	emb, _ := st["embedder"].(map[string]any)
	for _, key := range []string{"provider", "model", "dimensions"} {
		if _, ok := emb[key]; !ok {
			t.Errorf("status.embedder lacks %q", key)
		}
	}
	cat, _ := st["catalog"].(map[string]any)
	for _, key := range []string{"sources", "hash"} {
		if _, ok := cat[key]; !ok {
			t.Errorf("status.catalog lacks %q", key)
		}
	}
}

func TestMetrics(t *testing.T) {
	h, _ := newTestServer(t, true)
	do(h, "POST", "/mcp/tool-search", "", `{"query":"list issues"}`)
	do(h, "POST", "/mcp/tool-search", "", `{"query":""}`)
	rec := do(h, "GET", "/metrics", "", "")
	body, _ := io.ReadAll(rec.Body)
	for _, want := range []string{
		`toolsearch_http_requests_total{code="200",method="POST",route="/mcp/tool-search"} 1`,
		`toolsearch_http_requests_total{code="400",method="POST",route="/mcp/tool-search"} 1`,
		`toolsearch_http_request_duration_seconds_bucket{code="200",route="/mcp/tool-search",le=`,
		fmt.Sprintf("toolsearch_index_tools %d", mustDefaultLen(t)),
		"toolsearch_index_build_duration_seconds_count 1",
		`toolsearch_searches_total{degraded="false",mode="hybrid"} 1`,
		`toolsearch_search_results_total{source="core"} 1`,
		`toolsearch_embedding_calls_total{purpose="query",result="ok"} 1`,
		`toolsearch_index_builds_total{result="ok"} 1`,
		"toolsearch_degraded 0",
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

func mustDefaultLen(tb testing.TB) int {
	c, err := catalog.Default()
	if err != nil {
		tb.Fatal(err)
	}
	return c.Len()
}

func TestAuthHTTP(t *testing.T) {
	h, _ := newTestServerWith(t, serverOpts{build: true, keys: true})
	req := func(body string, tokens ...string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("POST", "/mcp/tool-search", strings.NewReader(body))
		for _, token := range tokens {
			r.Header.Add("Authorization", "Bearer "+token)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		return rec
	}
	tests := []struct {
		name, token, body string
		status            int
		code              string
		second            string // a second Authorization header
	}{
		{"no key", "", `{"query":"x"}`, 401, "unauthorized", ""},
		{"wrong key", "nope", `{"query":"x"}`, 401, "unauthorized", ""},
		{"good key", "key-all", `{"query":"merge"}`, 200, "", ""},
		// Which of two credentials counts would depend on the proxies in
		// between: neither does.
		{"two keys", "key-gh", `{"query":"merge"}`, 401, "unauthorized", "key-all"},
		{"a good key after a bad one", "nope", `{"query":"merge"}`, 401, "unauthorized", "key-all"},
		{"the same key twice", "key-all", `{"query":"merge"}`, 401, "unauthorized", "key-all"},
		{"scoped key", "key-gh", `{"query":"merge"}`, 200, "", ""},
		// A server the key cannot see answers as one that does not exist.
		{"outside policy", "key-gh", `{"query":"x","servers":["slack"]}`, 200, "", ""},
		{"nonexistent", "key-gh", `{"query":"x","servers":["nosuch"]}`, 200, "", ""},
	}
	for _, tt := range tests {
		var tokens []string
		for _, tok := range []string{tt.token, tt.second} {
			if tok != "" {
				tokens = append(tokens, tok)
			}
		}
		rec := req(tt.body, tokens...)
		if rec.Code != tt.status || (tt.code != "" && !strings.Contains(rec.Body.String(), `"code":"`+tt.code+`"`)) {
			t.Errorf("%s: %d %s, want %d %s", tt.name, rec.Code, rec.Body, tt.status, tt.code)
		}
		if tt.status == 401 && rec.Header().Get("WWW-Authenticate") == "" {
			t.Errorf("%s: 401 without WWW-Authenticate", tt.name)
		}
	}
	// The scoped key sees github tools only; the hidden core tool is not
	// even counted.
	var res search.Response
	json.Unmarshal(req(`{"query":"send a message and merge"}`, "key-gh").Body.Bytes(), &res)
	for _, tl := range res.Tools {
		if tl.Server != "github" {
			t.Errorf("github-only key saw %s/%s", tl.Server, tl.Name)
		}
	}
	if res.Withheld != 0 {
		t.Errorf("withheld = %d, want hidden tools uncounted", res.Withheld)
	}
	// Templates list only what the key can see.
	for token, wantSlack := range map[string]bool{"key-all": true, "key-gh": false} {
		r := httptest.NewRequest("GET", "/mcp/tool-search/templates", nil)
		r.Header.Set("Authorization", "Bearer "+token)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		body := rec.Body.String()
		if rec.Code != 200 || strings.Contains(body, "slack") != wantSlack || strings.Contains(body, "announce") != wantSlack ||
			!strings.Contains(body, "github/merge_pull_request") {
			t.Errorf("templates for %s: %d %s", token, rec.Code, body)
		}
	}
	// Status and health stay open for probes.
	if rec := do(h, "GET", "/mcp/tool-search/status", "", ""); rec.Code != 200 || !strings.Contains(rec.Body.String(), `"detail":"summary"`) {
		t.Errorf("status with auth: %d %s", rec.Code, rec.Body)
	}
}

func TestTemplatesHTTP(t *testing.T) {
	h, _ := newTestServer(t, true)
	rec := do(h, "GET", "/mcp/tool-search/templates", "", "")
	var got struct{ Templates []search.TemplateStatus }
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || len(got.Templates) != 2 || got.Templates[1].Tools[1] != "github/create_release" {
		t.Errorf("templates = %d %s", rec.Code, rec.Body)
	}
	rec = do(h, "POST", "/mcp/tool-search", "", `{"template":"release"}`)
	var res search.Response
	json.Unmarshal(rec.Body.Bytes(), &res)
	if res.Mode != "template" || len(res.Tools) != 3 || res.Tools[2].Source != "core" {
		t.Errorf("template search = %s", rec.Body)
	}
}

func TestRebuildHTTP(t *testing.T) {
	if h, _ := newTestServer(t, true); do(h, "POST", "/mcp/tool-search/rebuild", "", "").Code != 404 {
		t.Error("rebuild exists without an admin token")
	}
	var fail bool
	h, svc := newTestServerWith(t, serverOpts{build: true, admin: "adm1n", load: func(context.Context) (*search.Setup, error) {
		if fail {
			return nil, errors.New(`catalog x.json: server "a": tool #1 "": name is empty`)
		}
		return testSetup(t, false), nil
	}})
	rebuild := func(token string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("POST", "/mcp/tool-search/rebuild", nil)
		r.Header.Set("Authorization", "Bearer "+token)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		return rec
	}
	if rec := rebuild("wrong"); rec.Code != 401 || !strings.Contains(rec.Body.String(), "the admin token is required") {
		t.Errorf("rebuild with a wrong token = %d %s, want 401 naming the admin token (not an API key)", rec.Code, rec.Body)
	}
	before := svc.Status().IndexVersion
	rec := rebuild("adm1n")
	var st search.Status
	if err := json.Unmarshal(rec.Body.Bytes(), &st); rec.Code != 200 || err != nil || st.IndexVersion == before || !st.Ready {
		t.Errorf("rebuild = %d %s", rec.Code, rec.Body)
	}
	fail = true
	rec = rebuild("adm1n")
	if rec.Code != 422 || !strings.Contains(rec.Body.String(), "name is empty") {
		t.Errorf("failed rebuild = %d %s", rec.Code, rec.Body)
	}
	if now := svc.Status(); !now.Ready || now.IndexVersion != st.IndexVersion || !strings.Contains(now.LastError, "name is empty") {
		t.Errorf("after failed rebuild: %+v", now)
	}
}

func TestEmbeddedFieldPath(t *testing.T) {
	h, _ := newTestServer(t, true)
	rec := do(h, "POST", "/mcp/tool-search", "", `{"query":"x","visible_tools":"a"}`)
	if !strings.Contains(rec.Body.String(), `field \"visible_tools\" must be an array`) {
		t.Errorf("error for an embedded struct's field = %s", rec.Body)
	}
}

// TestEveryErrorIsJSON: malformed query strings, unknown parameters,
// console paths that name no file and HEAD requests are answered like
// everything else; a body far over the limit gets its 413 read, not a
// reset connection.
func TestEveryErrorIsJSON(t *testing.T) {
	h, _ := newTestServer(t, true)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	tests := []struct {
		method, path string
		body         io.Reader
		want         int
		code         string
	}{
		{"GET", "/mcp/tool-search/catalog?server=%zz", nil, 400, "malformed_query"},
		{"GET", "/mcp/tool-search/templates?x=1", nil, 400, "unknown_parameter"},
		{"GET", "/readyz?verbose", nil, 400, "unknown_parameter"},
		{"GET", "/console/nope.js", nil, 404, "not_found"},
		{"HEAD", "/readyz", nil, 200, ""},
		{"HEAD", "/mcp/tool-search/status", nil, 200, ""},
		{"GET", "/console/", nil, 200, ""},
		{"FOO", "/nope", nil, 404, "not_found"}, // a method chi does not know, on no route: not a 405 with an empty Allow
		{"FOO", "/mcp/tool-search", nil, 405, "method_not_allowed"},
		{"POST", "/mcp/tool-search", strings.NewReader(`{"query":"` + strings.Repeat("a", 10<<20) + `"}`), 413, "body_too_large"},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			req, _ := http.NewRequest(tt.method, srv.URL+tt.path, tt.body)
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatalf("%v (a reset connection instead of an answer?)", err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.want || (tt.code != "" && !strings.Contains(string(body), `"code":"`+tt.code+`"`)) {
				t.Errorf("%d %.200s, want %d %s", resp.StatusCode, body, tt.want, tt.code)
			}
		})
	}
}

// TestNoopFramedAsSearch: the load tests' no-op baseline answers as a
// search does, over a real connection: a body over net/http's chunking
// buffer goes out whole with its Content-Length, not chunked (a chunked
// baseline is slower than the search it is measured against); and a bad
// request gets the search's error.
func TestNoopFramedAsSearch(t *testing.T) {
	svc := search.New(search.Config{Embedder: embedding.NewLocal(64), Registerer: prometheus.NewRegistry()})
	if _, err := svc.Build(t.Context(), testSetup(t, false)); err != nil {
		t.Fatal(err)
	}
	answer := []byte(`{"tools":[],"pad":"` + strings.Repeat("x", 4000) + `"}` + "\n")
	srv := httptest.NewServer(NewServer(svc, Options{Registerer: prometheus.NewRegistry(), Noop: func(search.Request) []byte { return answer }}))
	defer srv.Close()
	post := func(path, body string) (*http.Response, string) {
		t.Helper()
		resp, err := http.Post(srv.URL+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	query := `{"query":"` + strings.Repeat("open a pull request and merge it ", 20) + `","top_k":50}`
	for _, path := range []string{"/noop", "/mcp/tool-search"} {
		resp, body := post(path, query)
		if resp.StatusCode != 200 || len(resp.TransferEncoding) > 0 || resp.ContentLength != int64(len(body)) || len(body) <= 2048 {
			t.Errorf("%s: %d, transfer encoding %v, length %d for %d bytes; want 200, over 2 KB, whole, with its length",
				path, resp.StatusCode, resp.TransferEncoding, resp.ContentLength, len(body))
		}
		if path == "/noop" && body != string(answer) {
			t.Errorf("/noop answered %.80q…, not its answer", body)
		}
	}
	noop, nbody := post("/noop", `{"query":"x","bogus":1}`)
	srch, sbody := post("/mcp/tool-search", `{"query":"x","bogus":1}`)
	if noop.StatusCode != 400 || noop.StatusCode != srch.StatusCode || !strings.Contains(nbody, `"unknown_field"`) || !strings.Contains(sbody, `"unknown_field"`) {
		t.Errorf("a bad request: /noop %d %s, search %d %s; want the same 400", noop.StatusCode, nbody, srch.StatusCode, sbody)
	}
}

// TestLoopbackNeedsALoopbackHost: on a loopback listener, a request that
// names another host (a page whose name was rebound to 127.0.0.1) is
// refused on every route; one naming the loopback is served.
func TestLoopbackNeedsALoopbackHost(t *testing.T) {
	h, svc := newTestServer(t, true)
	srv := httptest.NewServer(h) // listens on 127.0.0.1
	defer srv.Close()
	anyHost := httptest.NewServer(NewServer(svc, Options{AnyHost: true}))
	defer anyHost.Close()
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	for _, tt := range []struct {
		host, method, path string
		want               int
		srv                *httptest.Server // srv when nil
	}{
		{"rebound.example:" + port, "POST", "/mcp/tool-search", 403, nil},
		{"rebound.example", "GET", "/mcp/tool-search/status", 403, nil},
		{"rebound.example:" + port, "GET", "/console/", 403, nil},
		{"10.0.0.8:" + port, "GET", "/mcp/tool-search/catalog", 403, nil},
		{"localhost:" + port, "POST", "/mcp/tool-search", 200, nil},
		{"LOCALHOST", "GET", "/mcp/tool-search/status", 200, nil},
		{"127.0.0.1:" + port, "GET", "/healthz", 200, nil},
		{"127.0.0.2", "GET", "/healthz", 200, nil},
		{"[::1]:" + port, "GET", "/healthz", 200, nil},
		// -allow-any-host: for a proxy that connects over loopback.
		{"rebound.example:" + port, "POST", "/mcp/tool-search", 200, anyHost},
	} {
		to := srv
		if tt.srv != nil {
			to = tt.srv
		}
		req, _ := http.NewRequest(tt.method, to.URL+tt.path, strings.NewReader(`{"query":"list issues"}`))
		req.Host = tt.host
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tt.want || (tt.want == 403 && !strings.Contains(string(body), `"code":"forbidden_host"`)) {
			t.Errorf("%s %s with Host %s = %d %.200s, want %d", tt.method, tt.path, tt.host, resp.StatusCode, body, tt.want)
		}
	}
}

// TestQueryParameters: /mcp takes no query parameters, as the search
// routes take none they do not name, and a key put in the URL is told
// where it goes rather than ignored. On /mcp the refusal is JSON-RPC.
func TestQueryParameters(t *testing.T) {
	svc := search.New(search.Config{Embedder: embedding.NewLocal(64)})
	if _, err := svc.Build(t.Context(), testSetup(t, false)); err != nil {
		t.Fatal(err)
	}
	h := NewServer(svc, Options{MCP: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusAccepted) })})
	tests := []struct {
		method, target string
		want           int
		inBody         string
	}{
		{"POST", "/mcp", http.StatusAccepted, ""},
		{"POST", "/mcp?session=1", 400, `"jsonrpc":"2.0"`},
		{"POST", "/mcp?session=1", 400, `unknown query parameter \"session\"; this endpoint takes none`},
		{"GET", "/mcp?api_key=sk-secret", 400, "an API key goes in the Authorization header (Bearer), never in the URL"},
		{"POST", "/mcp/tool-search?Token=sk-secret", 400, "an API key goes in the Authorization header"},
		{"GET", "/mcp/tool-search/status?x=1", 400, "this endpoint takes none"},
	}
	for _, tt := range tests {
		rec := do(h, tt.method, tt.target, "application/json", `{"query":"merge"}`)
		if rec.Code != tt.want || !strings.Contains(rec.Body.String(), tt.inBody) || strings.Contains(rec.Body.String(), "sk-secret") {
			t.Errorf("%s %s = %d %s; want %d with %s, and no key echoed", tt.method, tt.target, rec.Code, rec.Body, tt.want, tt.inBody)
		}
	}
}

// An answer written after WriteTimeout is cut off, so a client that stops
// reading lets go of what it was sent. /mcp's streams last as long as they
// need, but each write gets WriteTimeout to reach the client: one that
// takes nothing of a stream for that long loses it.
func TestWriteTimeout(t *testing.T) {
	late := func() { time.Sleep(300 * time.Millisecond) }
	svc := search.New(search.Config{Embedder: embedding.NewLocal(64)})
	if _, err := svc.Build(t.Context(), testSetup(t, false)); err != nil {
		t.Fatal(err)
	}
	streamErr := make(chan error, 1)
	srv := httptest.NewServer(NewServer(svc, Options{WriteTimeout: 100 * time.Millisecond,
		Noop: func(search.Request) []byte { late(); return []byte("{}\n") },
		MCP: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodGet {
				late()
				io.WriteString(w, "streamed")
				return
			}
			chunk := make([]byte, 64<<10)
			for range 4096 { // 256 MiB: more than any socket buffers
				if _, err := w.Write(chunk); err != nil {
					streamErr <- err
					return
				}
				w.(http.Flusher).Flush()
			}
			streamErr <- nil
		}),
	}))
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Post(srv.URL+"/noop", "application/json", strings.NewReader(`{"query":"x"}`))
	if err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Errorf("an answer written after the write timeout arrived: %d %q", resp.StatusCode, b)
	}
	resp, err = client.Get(srv.URL + "/mcp")
	if err != nil {
		t.Fatalf("/mcp past the write timeout: %v", err)
	}
	defer resp.Body.Close()
	if b, _ := io.ReadAll(resp.Body); string(b) != "streamed" {
		t.Errorf("/mcp past the write timeout = %d %q, want its stream whole", resp.StatusCode, b)
	}
	// A client that asks and never reads.
	conn, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	io.WriteString(conn, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n")
	select {
	case err := <-streamErr:
		if err == nil {
			t.Error("256 MiB went to a client that read none of it")
		}
	case <-time.After(20 * time.Second): // a liveness bound
		t.Fatal("a stream to a client that reads nothing held its writer")
	}
}

// blockedWriter is a client that stops reading: Write waits until
// released.
type blockedWriter struct {
	*httptest.ResponseRecorder
	writing, release chan struct{}
}

func (w *blockedWriter) Write(b []byte) (int, error) {
	close(w.writing)
	<-w.release
	return w.ResponseRecorder.Write(b)
}

// Catalog reports are made one at a time, each written before the next
// is made: a report of a large catalog allocates hundreds of MB, and 40
// asked at once took the process past 5 GB. One held by a client that
// does not read keeps the next waiting, and a caller that gives up while
// it waits gets nothing made for it.
func TestCatalogReportsOneAtATime(t *testing.T) {
	h, _ := newTestServer(t, true)
	first := &blockedWriter{httptest.NewRecorder(), make(chan struct{}), make(chan struct{})}
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.ServeHTTP(first, httptest.NewRequest("GET", "/mcp/tool-search/catalog", nil))
	}()
	<-first.writing
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	waited := httptest.NewRecorder()
	h.ServeHTTP(waited, httptest.NewRequest("GET", "/mcp/tool-search/catalog", nil).WithContext(ctx))
	if waited.Body.Len() != 0 {
		t.Errorf("a report was made beside one being written: %d %.100s", waited.Code, waited.Body)
	}
	close(first.release)
	<-done
	if first.Code != 200 || !strings.Contains(first.Body.String(), `"tools"`) {
		t.Errorf("the first report = %d %.100s", first.Code, first.Body)
	}
	if rec := do(h, "GET", "/mcp/tool-search/catalog", "", ""); rec.Code != 200 {
		t.Errorf("a report after = %d %.100s", rec.Code, rec.Body)
	}
}

// A handler that works longer than the write timeout still answers: the
// deadline runs from when it writes, not from the request's start. A
// rebuild through a slow provider took 300 ms here, past a 100 ms timeout.
func TestSlowRebuildStillAnswers(t *testing.T) {
	load := func(ctx context.Context) (*search.Setup, error) {
		time.Sleep(300 * time.Millisecond)
		return testSetup(t, false), nil
	}
	svc := search.New(search.Config{Embedder: embedding.NewLocal(64), Load: load})
	if _, err := svc.Build(t.Context(), testSetup(t, false)); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(NewServer(svc, Options{WriteTimeout: 100 * time.Millisecond, AdminToken: "adm"}))
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/mcp/tool-search/rebuild", nil)
	req.Header.Set("Authorization", "Bearer adm")
	resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
	if err != nil {
		t.Fatalf("a rebuild slower than the write timeout: %v", err)
	}
	defer resp.Body.Close()
	if b, _ := io.ReadAll(resp.Body); resp.StatusCode != 200 || !strings.Contains(string(b), `"ready":true`) {
		t.Errorf("a rebuild slower than the write timeout = %d %.200s", resp.StatusCode, b)
	}
}

// A large catalog report gives its memory back once written: the process
// collects (runtime.GC, through debug.FreeOSMemory) after answering.
func TestLargeReportGivesMemoryBack(t *testing.T) {
	h, _ := newTestServer(t, true)
	defer func(n int) { reportReturnTools = n }(reportReturnTools)
	reportReturnTools = 1 // the test catalog's few tools are a large report
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if rec := do(h, "GET", "/mcp/tool-search/catalog", "", ""); rec.Code != 200 {
		t.Fatalf("report = %d %.100s", rec.Code, rec.Body)
	}
	runtime.ReadMemStats(&after)
	if after.NumForcedGC == before.NumForcedGC {
		t.Error("no collection was forced after a large report")
	}
}

// TestRefuseSelf: a request naming this process (an upstream that points
// back at the service) is a 508 on every route; another process's name,
// or none, passes.
func TestRefuseSelf(t *testing.T) {
	svc := search.New(search.Config{Embedder: embedding.NewLocal(64), Version: "test"})
	if _, err := svc.Build(t.Context(), testSetup(t, false)); err != nil {
		t.Fatal(err)
	}
	h := NewServer(svc, Options{Instance: "me"})
	for _, tt := range []struct {
		instance, path string
		want           int
	}{
		{"me", "/mcp/tool-search", http.StatusLoopDetected},
		{"me", "/mcp", http.StatusLoopDetected},
		{"me", "/nope", http.StatusLoopDetected},
		{"another", "/mcp/tool-search", http.StatusOK},
		{"", "/mcp/tool-search", http.StatusOK},
	} {
		req := httptest.NewRequest(http.MethodPost, tt.path, strings.NewReader(`{"query":"list issues"}`))
		req.Header.Set("Content-Type", "application/json")
		if tt.instance != "" {
			req.Header.Set(upstream.InstanceHeader, tt.instance)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tt.want || tt.want == http.StatusLoopDetected && !strings.Contains(rec.Body.String(), `"loop_detected"`) {
			t.Errorf("%s from %q: %d %.200s, want %d", tt.path, tt.instance, rec.Code, rec.Body, tt.want)
		}
	}
}

// failingProvider is a provider (the service caches its vectors) that
// fails once told to: a rebuild's embedding fails, as through a provider
// that went down.
type failingProvider struct {
	local *embedding.Local
	fail  atomic.Bool
}

func (f *failingProvider) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if f.fail.Load() {
		return nil, errors.New("provider down")
	}
	return f.local.Embed(ctx, texts)
}

func (f *failingProvider) Info() embedding.Info {
	return embedding.Info{Provider: "failing", Model: "m", Dimensions: f.local.Info().Dimensions}
}

// A rebuild whose embedding fails answers 503 and says what serves: the
// previous index, or, when the rebuild had let it go for a memory limit
// that could not hold two, the new catalog ranked by keywords.
func TestFailedRebuildSaysWhatServes(t *testing.T) {
	for _, tc := range []struct {
		name  string
		limit int64
		want  string
	}{
		{"no limit", 0, "the previous index keeps serving"},
		{"a limit under two indexes", 1, "keywords rank the new catalog"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			setup := testSetup(t, false)
			revised := *setup
			def, err := catalog.DefaultPart()
			if err != nil {
				t.Fatal(err)
			}
			added, err := catalog.Parse("added.json", []byte(`{"tools":[{"name":"post_note","description":"Post a note to a board."}]}`), "notes")
			if err != nil {
				t.Fatal(err)
			}
			if revised.Catalog, err = catalog.New([]catalog.Part{def, added}); err != nil {
				t.Fatal(err)
			}
			emb := &failingProvider{local: embedding.NewLocal(64)}
			svc := search.New(search.Config{Embedder: emb, MemoryLimit: tc.limit, QueryCacheSize: -1,
				Load: func(context.Context) (*search.Setup, error) { return &revised, nil }})
			if _, err := svc.Build(t.Context(), setup); err != nil {
				t.Fatal(err)
			}
			emb.fail.Store(true)
			h := NewServer(svc, Options{AdminToken: "adm"})
			r := httptest.NewRequest("POST", "/mcp/tool-search/rebuild", nil)
			r.Header.Set("Authorization", "Bearer adm")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), tc.want) {
				t.Errorf("a failed rebuild = %d %s; want 503 saying %q", rec.Code, rec.Body, tc.want)
			}
		})
	}
}
