package httpapi

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

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
