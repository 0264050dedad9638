package httpapi

import (
	"bufio"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolsearch/toolsearch/pkg/search"
)

// FuzzSearchBody sends arbitrary bodies to the search endpoint: the answer
// is always a 200 with tools, or a 4xx with a JSON error; never a 5xx.
func FuzzSearchBody(f *testing.F) {
	h, _ := newTestServer(f, true)
	for _, seed := range []string{
		`{"query":"list files","top_k":3}`, `{"query":""}`, `{"query":"x","top_k":1e9}`, `{"query":"a\u0000"}`,
		`[`, `{"query":"x","extra":1}`, "{\"query\":\"\xff\"}", `{"query":"x"} trailing`,
		`{"messages":[{"role":"user","content":[{"type":"text","text":"list files"},{"type":"tool_result","content":"x"}]}]}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		rec := do(h, "POST", "/mcp/tool-search", "application/json", body)
		switch {
		case rec.Code == http.StatusOK:
			var ok struct {
				Tools []search.Hit `json:"tools"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &ok); err != nil || len(ok.Tools) > search.MaxTopK {
				t.Fatalf("200 with a bad body %q: %v", rec.Body, err)
			}
			if !utf8.ValidString(body) || strings.TrimSpace(body) == "" {
				t.Fatalf("accepted body %q", body)
			}
		case rec.Code >= 400 && rec.Code < 500:
			var e errorResponse
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error.Code == "" || e.Error.Message == "" {
				t.Fatalf("%d without a JSON error: %q", rec.Code, rec.Body)
			}
		default:
			t.Fatalf("body %q: status %d: %s", body, rec.Code, rec.Body)
		}
	})
}

// FuzzRequestTarget sends arbitrary methods and request targets, read by
// net/http's own request parser as a server reads them: whatever routes
// or fails to, the answer is never a 5xx, an error is a bounded JSON one,
// and every answer forbids caching and sniffing.
func FuzzRequestTarget(f *testing.F) {
	// The API's handler as serve runs it, not the tests' ServeMux in
	// front of it, which cleans paths and answers "*" itself.
	_, svc := newTestServer(f, true)
	h := NewServer(svc, Options{Registerer: prometheus.NewRegistry()})
	for _, seed := range [][2]string{
		{"GET", "/mcp/tool-search/status"}, {"POST", "/mcp/tool%2Dsearch"}, {"POST", "/mcp%2Ftool-search"},
		{"GET", "/console/../mcp/tool-search/status"}, {"GET", "/%zz"}, {"GET", "//"}, {"GET", "/mcp/tool-search/catalog?server=%ff"},
		{"GET", "*"}, {"OPTIONS", "*"}, {"GET", "http://example.com/healthz"}, {"M0000", "/mcp/tool-search"}, {"GET", "/console/%2e%2e/%2e%2e/etc/passwd"},
		{"GET", "/mcp/tool-search/learned?tool=a&tool=b"}, {"DELETE", "/mcp"}, {"GET", "/%E2%80%AE/healthz"},
		{"GET", "/consol%65/index.html"}, {"GET", "/console/%69ndex.html"}, {"GET", "/console/x%2Fy"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, method, target string) {
		raw := method + " " + target + " HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
		r, err := http.ReadRequest(bufio.NewReader(strings.NewReader(raw)))
		if err != nil {
			return // net/http answers it 400 itself, before any handler
		}
		r.RemoteAddr = "192.0.2.1:1234"
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if rec.Code >= 500 {
			t.Fatalf("%s %q: %d %s", method, target, rec.Code, rec.Body)
		}
		if rec.Header().Get("Cache-Control") == "" || rec.Header().Get("X-Content-Type-Options") != "nosniff" {
			t.Fatalf("%s %q: %d without Cache-Control and nosniff: %v", method, target, rec.Code, rec.Header())
		}
		if rec.Code >= 400 {
			// The API's error, or on /mcp a JSON-RPC one: a message either way.
			var e struct {
				Error struct {
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error.Message == "" || len(e.Error.Message) > 400 {
				t.Fatalf("%s %q: %d without a bounded JSON error: %.500s", method, target, rec.Code, rec.Body)
			}
		}
	})
}
