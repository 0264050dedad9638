// Package api holds the service's OpenAPI contract. Its test sends real
// requests to the real router and validates every response, success and
// error, against openapi.yaml, so the spec cannot drift from the code. It
// is a module of its own to keep the validator out of the service's
// dependencies.
package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolsearch/toolsearch/pkg/access"
	"github.com/toolsearch/toolsearch/pkg/mcpserver"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"go.yaml.in/yaml/v3"

	"github.com/toolsearch/toolsearch/pkg/config"
	"github.com/toolsearch/toolsearch/pkg/embedding"
	"github.com/toolsearch/toolsearch/pkg/httpapi"
	"github.com/toolsearch/toolsearch/pkg/index"
	"github.com/toolsearch/toolsearch/pkg/learn"
	"github.com/toolsearch/toolsearch/pkg/search"
	"github.com/toolsearch/toolsearch/pkg/upstream"
)

func newValidator(t *testing.T) validator.Validator {
	t.Helper()
	spec, err := os.ReadFile("openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := libopenapi.NewDocument(spec)
	if err != nil {
		t.Fatalf("openapi.yaml: %v", err)
	}
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		t.Fatalf("openapi.yaml: %v", errs)
	}
	if ok, errs := v.ValidateDocument(); !ok {
		for _, e := range errs {
			t.Errorf("openapi.yaml is not a valid OpenAPI 3.1 document: %v", e)
		}
		t.FailNow()
	}
	return v
}

// newServer is the default catalog and config, one API key ("k"), an
// admin token ("adm") and learning on.
func newServer(t *testing.T, build bool) http.Handler {
	t.Helper()
	load := func(context.Context) (*search.Setup, error) {
		p, err := config.DefaultPolicy()
		if err != nil {
			return nil, err
		}
		p.Keys = []access.Key{{Name: "k", Hash: access.HashSecret("k")}}
		return p, nil
	}
	store, err := learn.Open(filepath.Join(t.TempDir(), "learned.db"), learn.Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	svc := search.New(search.Config{Embedder: embedding.NewLocal(256), Load: load, Version: "test", Learning: &search.Learning{Store: store}})
	if build {
		if _, err := svc.Rebuild(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	return httpapi.NewServer(svc, httpapi.Options{AdminToken: "adm", MCP: mcpserver.New(svc, mcpserver.Options{}).Handler()})
}

func TestResponsesMatchTheSpec(t *testing.T) {
	v := newValidator(t)
	h := newServer(t, true)
	const js = "application/json"
	id := searchID(t, h)
	tests := []struct {
		method, path, token, body string
		contentType               string
		status                    int
	}{
		{"GET", "/healthz", "", "", "", 200},
		{"GET", "/readyz", "", "", "", 200},
		{"GET", "/mcp/tool-search/status", "", "", "", 200},
		{"GET", "/mcp/tool-search/templates", "k", "", "", 200},
		{"GET", "/mcp/tool-search/servers", "k", "", "", 200},
		{"GET", "/mcp/tool-search/servers?x=1", "k", "", "", 400},
		{"GET", "/mcp/tool-search/catalog", "k", "", "", 200},
		{"GET", "/mcp/tool-search/catalog?server=github&server=slack", "k", "", "", 200},
		{"GET", "/mcp/tool-search/catalog?server=nope", "k", "", "", 404},
		{"GET", "/mcp/tool-search/catalog?nope=1", "k", "", "", 400},
		{"GET", "/mcp/tool-search/catalog", "", "", "", 401},
		{"POST", "/mcp/tool-search", "k", `{"query":"merge a pull request","top_k":3}`, js, 200},
		{"POST", "/mcp/tool-search", "k", `{"query":"merge a pull request","top_k":2,"explain":true,"include_schema":true,"format":"openai"}`, js, 200},
		{"POST", "/mcp/tool-search", "k", `{"query":"merge a pull request","mode":"keyword","format":"gemini","include_core":false}`, js, 200},
		{"POST", "/mcp/tool-search", "k", `{"query":"merge","mode":"semantic","min_score":0.1,"visible_servers":["github"]}`, js, 200},
		{"POST", "/mcp/tool-search", "k", `{"template":"release"}`, js, 200},
		{"POST", "/mcp/tool-search", "k", `{"query":"select:create_issue,nope"}`, js, 200},
		{"POST", "/mcp/tool-search", "k", `{"operation":"list","server_match":"git","top_k":2}`, js, 200},
		{"POST", "/mcp/tool-search", "k", `{"regex":"^list_","regex_description":true,"read_only":true,"include_schema":true,"format":"mcp"}`, js, 200},
		{"POST", "/mcp/tool-search", "k", `{"query":"delete a branch","exclude_destructive":true}`, js, 200},
		{"POST", "/mcp/tool-search", "k", `{"regex":"(x"}`, js, 400},
		{"POST", "/mcp/tool-search", "k", `{"messages":[{"role":"user","content":"a release went out"},{"role":"user","content":"tell the team"}]}`, js, 200},
		{"POST", "/mcp/tool-search", "k", `{"messages":[{"role":"user","content":"` + strings.Repeat("a ", 17000) + `"}]}`, js, 413},
		{"POST", "/mcp/tool-search", "k", `{"query":"x","top_k":0}`, js, 400},
		{"POST", "/mcp/tool-search", "k", `{"query":`, js, 400},
		{"POST", "/mcp/tool-search", "k", `{"query":"x","nope":1}`, js, 400},
		{"POST", "/mcp/tool-search", "", `{"query":"x"}`, js, 401},
		{"POST", "/mcp/tool-search", "k", `{"template":"nope"}`, js, 404},
		{"GET", "/mcp/tool-search", "", "", "", 405},
		{"POST", "/mcp/tool-search", "k", `{"query":"` + strings.Repeat("a", httpapi.SearchMaxBodyBytes) + `"}`, js, 413},
		{"POST", "/mcp/tool-search", "k", `{"query":"x"}`, "text/plain", 415},
		{"POST", "/mcp/tool-search/rebuild", "adm", "", "", 200},
		{"POST", "/mcp/tool-search/rebuild", "k", "", "", 401},
		{"POST", "/mcp/tool-search/feedback", "k", `{"id":"` + id + `","used":["github/merge_pull_request","nope"]}`, js, 200},
		{"POST", "/mcp/tool-search/feedback", "k", `{"id":"` + id + `","used":["github/merge_pull_request"]}`, js, 404},
		{"POST", "/mcp/tool-search/feedback", "k", `{"id":"x","used":[]}`, js, 400},
		{"GET", "/mcp/tool-search/learned", "k", "", "", 200},
		{"GET", "/mcp/tool-search/learned?tool=github/merge_pull_request", "k", "", "", 200},
		{"GET", "/mcp/tool-search/learned?tool=nope/nope", "k", "", "", 404},
		{"DELETE", "/mcp/tool-search/learned?tool=github/merge_pull_request", "adm", "", "", 200},
		{"DELETE", "/mcp/tool-search/learned", "k", "", "", 401},
		// /mcp's errors are JSON-RPC, its key check's too.
		{"POST", "/mcp", "", mcpInit, js, 401},
		{"POST", "/mcp", "k", `{"jsonrpc":"2.0","id":2,"method":"ping"}`, js, 400},
		{"DELETE", "/mcp", "", "", "", 401},
	}
	for _, tt := range tests {
		name := tt.method + " " + tt.path + " " + tt.body
		t.Run(name[:min(len(name), 60)], func(t *testing.T) {
			req := httptest.NewRequest(tt.method, "http://localhost:8080"+tt.path, strings.NewReader(tt.body))
			if tt.contentType != "" {
				req.Header.Set("Content-Type", tt.contentType)
			}
			if tt.token != "" {
				req.Header.Set("Authorization", "Bearer "+tt.token)
			}
			checkAnswer(t, v, h, req, tt.body, tt.status)
		})
	}
}

// TestMCPRefusalsMatchTheSpec: every refusal of /mcp, the MCP server's
// own (a missing or unknown session, a batch, an initialize in a
// session) as well as the middleware's, is a JSON-RPC error with its
// reason, and a method the route does not take is a 405 naming the three
// it does.
func TestMCPRefusalsMatchTheSpec(t *testing.T) {
	v := newValidator(t)
	h := newServer(t, true)
	live := mcpSession(t, h)
	ping := `{"jsonrpc":"2.0","id":2,"method":"ping"}`
	tests := []struct {
		method, session, body string // session "live": the one initialized
		status                int
	}{
		{"GET", "", "", 400},
		{"DELETE", "", "", 400},
		{"POST", "", ping, 400},
		{"POST", "nope", ping, 404},
		{"GET", "nope", "", 404},
		{"DELETE", "nope", "", 404},
		{"POST", "live", `[` + ping + `]`, 400},
		{"POST", "live", mcpInit, 400},
		{"POST", "live", `{"jsonrpc":"2.0","id":3,`, 400},
		{"PUT", "live", ping, 405},
		{"PATCH", "", ping, 405},
		{"OPTIONS", "", "", 405},
		{"HEAD", "live", "", 405},
		{"HEAD", "", "", 405},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.session+" "+tt.body, func(t *testing.T) {
			req := httptest.NewRequest(tt.method, "http://localhost:8080/mcp", strings.NewReader(tt.body))
			req.Header.Set("Authorization", "Bearer k")
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			switch tt.session {
			case "live": // the session initialized above
				req.Header.Set("Mcp-Session-Id", live)
			case "":
			default:
				req.Header.Set("Mcp-Session-Id", tt.session)
			}
			checkAnswer(t, v, h, req, tt.body, tt.status)
		})
	}
}

// mcpSession initializes an MCP session with key k and returns its id.
func mcpSession(t *testing.T, h http.Handler) string {
	t.Helper()
	req := httptest.NewRequest("POST", "http://localhost:8080/mcp", strings.NewReader(mcpInit))
	req.Header.Set("Authorization", "Bearer k")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	id := rec.Header().Get("Mcp-Session-Id")
	if rec.Code != http.StatusOK || id == "" {
		t.Fatalf("initialize: %d %s", rec.Code, rec.Body)
	}
	return id
}

// checkAnswer serves req and checks its status and that the answer is one
// the spec describes. A 405 has no operation in the spec (a path's
// methods are its operations), so its shape is checked here: /mcp's as
// JSON-RPC, naming the methods the route takes.
func checkAnswer(t *testing.T, v validator.Validator, h http.Handler, req *http.Request, body string, status int) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != status {
		t.Fatalf("status %d, want %d: %s", rec.Code, status, rec.Body)
	}
	resp := rec.Result()
	resp.Request = req
	if rec.Code == http.StatusMethodNotAllowed {
		allow := resp.Header.Get("Allow")
		switch {
		case req.URL.Path == "/mcp":
			if !strings.HasPrefix(rec.Body.String(), `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,`) ||
				!strings.Contains(rec.Body.String(), `"data":{"reason":"method_not_allowed","request_id":"`) || allow != "GET, POST, DELETE" {
				t.Errorf("405 = %s (Allow %q)", rec.Body, allow)
			}
		case !strings.HasPrefix(rec.Body.String(), `{"error":{"code":"method_not_allowed"`) || allow == "":
			t.Errorf("405 = %s (Allow %q)", rec.Body, allow)
		}
		return
	}
	req2 := httptest.NewRequest(req.Method, req.URL.String(), strings.NewReader(body))
	req2.Header = req.Header.Clone()
	if ok, errs := v.ValidateHttpResponse(req2, resp); !ok {
		for _, e := range errs {
			t.Errorf("response does not match the spec: %s: %s (%v)", e.Message, e.Reason, e.SchemaValidationErrors)
		}
		t.Logf("body: %.600s", rec.Body)
	}
}

// With its dependencies failing, status and a search still match the
// spec: an upstream failing (its next listing, its breaker open) and the
// provider's query breaker open, the search answered by keywords.
func TestFailingDependenciesMatchTheSpec(t *testing.T) {
	v := newValidator(t)
	var failing atomic.Bool
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Input []string `json:"input"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		if failing.Load() {
			http.Error(w, `{"error":{"message":"overloaded"}}`, http.StatusServiceUnavailable)
			return
		}
		type item struct {
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		}
		data := make([]item, len(req.Input))
		for i, text := range req.Input {
			data[i] = item{i, []float32{1, float32(len(text) % 7), float32(len(text) % 3), 1}}
		}
		json.NewEncoder(w).Encode(map[string]any{"data": data})
	}))
	defer provider.Close()
	emb := embedding.NewOpenAI(embedding.OpenAIConfig{BaseURL: provider.URL + "/v1", APIKey: "sk-contract", Dimensions: 4, MaxRetries: -1})
	svc := search.New(search.Config{Embedder: emb, Version: "test", QueryCacheSize: -1, Load: func(context.Context) (*search.Setup, error) { return config.DefaultPolicy() }})
	if _, err := svc.Rebuild(t.Context()); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	ups := upstreams{{Name: "up", URL: "http://127.0.0.1:1/mcp", State: "failing", LastError: "connect: Unauthorized", LastErrorAt: &now,
		NextRetry: &now, LastCallError: "Unauthorized", LastCallErrorAt: &now, CallsFailing: true, Breaker: upstream.Open, Failures: 5,
		ListChanged: upstream.ListChangedUnknown}}
	h := httpapi.NewServer(svc, httpapi.Options{AdminToken: "adm", Upstreams: ups})
	failing.Store(true)
	var last *httptest.ResponseRecorder
	for i := range 4 { // three failures open the breaker; the fourth is not asked
		last = httptest.NewRecorder()
		h.ServeHTTP(last, jsonRequest("POST", "/mcp/tool-search", fmt.Sprintf(`{"query":"merge pull request %d"}`, i)))
	}
	if !strings.Contains(last.Body.String(), `"embedding_reason":"provider_failing"`) {
		t.Fatalf("the fourth search: %s", last.Body)
	}
	status := httptest.NewRecorder()
	h.ServeHTTP(status, jsonRequest("GET", "/mcp/tool-search/status", ""))
	if !strings.Contains(status.Body.String(), `"query_breaker":"open"`) || !strings.Contains(status.Body.String(), `"next_retry_at":"`) {
		t.Fatalf("status: %s", status.Body)
	}
	for _, c := range []struct {
		req *http.Request
		rec *httptest.ResponseRecorder
	}{
		{jsonRequest("POST", "/mcp/tool-search", `{"query":"merge pull request 3"}`), last},
		{jsonRequest("GET", "/mcp/tool-search/status", ""), status},
	} {
		resp := c.rec.Result()
		resp.Request = c.req
		if ok, errs := v.ValidateHttpResponse(c.req, resp); !ok {
			for _, e := range errs {
				t.Errorf("%s %s does not match the spec: %s: %s (%v)", c.req.Method, c.req.URL.Path, e.Message, e.Reason, e.SchemaValidationErrors)
			}
		}
	}
}

// upstreams is a fixed upstream status.
type upstreams []upstream.Status

func (u upstreams) Status() []upstream.Status { return u }

// jsonRequest is a request to path with body as JSON, if any.
func jsonRequest(method, path, body string) *http.Request {
	req := httptest.NewRequest(method, "http://localhost:8080"+path, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	return req
}

const mcpInit = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// searchID is the search id of an answer for key k that returned
// github/merge_pull_request.
func searchID(t *testing.T, h http.Handler) string {
	t.Helper()
	req := httptest.NewRequest("POST", "http://localhost:8080/mcp/tool-search", strings.NewReader(`{"query":"merge a pull request"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer k")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var res search.Response
	if err := json.Unmarshal(rec.Body.Bytes(), &res); err != nil || res.SearchID == "" {
		t.Fatalf("no search id: %d %s", rec.Code, rec.Body)
	}
	return res.SearchID
}

// Before the first build, readiness and search answer 503 in the error shape.
func TestNotReadyMatchesTheSpec(t *testing.T) {
	v := newValidator(t)
	h := newServer(t, false)
	for _, path := range []string{"/readyz", "/mcp/tool-search/status"} {
		req := httptest.NewRequest("GET", "http://localhost:8080"+path, nil)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		resp := rec.Result()
		if ok, errs := v.ValidateHttpResponse(httptest.NewRequest("GET", "http://localhost:8080"+path, nil), resp); !ok {
			t.Errorf("GET %s (%d) does not match the spec: %v\n%s", path, rec.Code, errs, rec.Body)
		}
	}
}

// Valid requests must be valid by the spec too.
func TestRequestsMatchTheSpec(t *testing.T) {
	v := newValidator(t)
	for _, body := range []string{`{"query":"x"}`, `{"template":"release","include_core":false}`, `{"operation":"list","servers":["github"],"cursor":"abc"}`,
		`{"messages":[{"role":"developer","content":"be brief"},{"role":"assistant","content":null,"tool_calls":[]},{"role":"user","content":[{"type":"text","text":"x"}]},{"role":"model","parts":[{"text":"y"}]}]}`} {
		req := httptest.NewRequest("POST", "http://localhost:8080/mcp/tool-search", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if ok, errs := v.ValidateHttpRequest(req); !ok {
			t.Errorf("request %s does not match the spec: %v", body, errs)
		}
	}
}

// The spec's closed lists are the code's: a value the service can send
// that the spec does not list fails a client that validates answers, and
// it would be sent only in a state the tests above do not reach (a
// provider failing, a rebuild short of memory); a request value the code
// takes that the spec does not list is one a validating client cannot
// send.
func TestEnumsMatchTheCode(t *testing.T) {
	spec := readSpec(t)
	modes := func(ms ...search.Mode) []string {
		out := make([]string, len(ms))
		for i, m := range ms {
			out[i] = string(m)
		}
		return out
	}
	for _, tc := range []struct {
		path string // under components.schemas, dotted
		code []string
	}{
		{"SearchResponse.diagnostic.embedding_reason", search.DegradedReasons()},
		{"Status.quantization", []string{index.QuantNone, index.QuantBinary, index.QuantSketch}},
		{"SearchRequest.messages.role", search.RoleNames()},
		{"SearchRequest.mode", modes(search.ModeHybrid, search.ModeSemantic, search.ModeKeyword)},
		{"SearchResponse.mode", modes(search.ModeHybrid, search.ModeSemantic, search.ModeKeyword, search.ModeTemplate, search.ModeSelect, search.ModeList, search.ModeRegex)},
	} {
		enum, _ := schemaAt(spec, tc.path)["enum"].([]any)
		if enum == nil {
			t.Errorf("openapi.yaml: no enum at %s", tc.path)
			continue
		}
		var listed []string
		for _, v := range enum {
			listed = append(listed, fmt.Sprint(v))
		}
		slices.Sort(listed)
		code := slices.Sorted(slices.Values(tc.code))
		if !slices.Equal(listed, code) {
			t.Errorf("openapi.yaml lists %s %v; the code takes or sends %v", tc.path, listed, code)
		}
	}
}

// The spec's bounds on a search request are the code's: a client that
// validates against the spec must not be stopped short of what the
// service takes, nor told it may send what the service refuses.
// (The spec said 64 turns for a conversation after the code took 1,024.)
func TestLimitsMatchTheCode(t *testing.T) {
	spec := readSpec(t)
	for _, tc := range []struct {
		path, key string
		code      int
	}{
		{"SearchRequest.query", "maxLength", search.MaxInputBytes},
		{"SearchRequest.messages", "maxItems", search.MaxMessages},
		{"SearchRequest.top_k", "maximum", search.MaxTopK},
		{"SearchRequest.regex", "maxLength", search.MaxRegexBytes},
		{"SearchResponse.diagnostic.unknown", "maxItems", search.MaxUnknownListed},
	} {
		if got := fmt.Sprint(schemaAt(spec, tc.path)[tc.key]); got != fmt.Sprint(tc.code) {
			t.Errorf("openapi.yaml: %s %s is %s; the code's limit is %d", tc.path, tc.key, got, tc.code)
		}
	}
}

func readSpec(t *testing.T) map[string]any {
	t.Helper()
	data, err := os.ReadFile("openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var spec map[string]any
	if err := yaml.Unmarshal(data, &spec); err != nil {
		t.Fatal(err)
	}
	return spec
}

// schemaAt is the schema at path under components.schemas: a schema's
// name, then property names, through an array's items.
func schemaAt(spec map[string]any, path string) map[string]any {
	node := spec["components"].(map[string]any)["schemas"]
	for i, name := range strings.Split(path, ".") {
		m, _ := node.(map[string]any)
		if i > 0 {
			if items, ok := m["items"].(map[string]any); ok {
				m = items
			}
			m, _ = m["properties"].(map[string]any)
		}
		node = m[name]
	}
	m, _ := node.(map[string]any)
	return m
}
