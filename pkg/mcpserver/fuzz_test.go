package mcpserver

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/toolsearch/toolsearch/pkg/access"

	"github.com/toolsearch/toolsearch/pkg/catalog"
	"github.com/toolsearch/toolsearch/pkg/embedding"
	"github.com/toolsearch/toolsearch/pkg/httpapi"
	"github.com/toolsearch/toolsearch/pkg/search"
)

// FuzzMCPRequest sends arbitrary bodies and protocol headers to /mcp (in
// process): never a 5xx, every error a bounded JSON answer, and nothing of
// unbounded size echoed back.
func FuzzMCPRequest(f *testing.F) {
	cat, err := catalog.Default()
	if err != nil {
		f.Fatal(err)
	}
	svc := search.New(search.Config{Embedder: embedding.NewLocal(64)})
	keys := []access.Key{{Name: "a", Hash: sha256.Sum256([]byte("key-a"))}}
	if _, err := svc.Build(context.Background(), &search.Setup{Catalog: cat, Keys: keys}); err != nil {
		f.Fatal(err)
	}
	h := httpapi.NewServer(svc, httpapi.Options{MCP: New(svc, Options{Sessions: SessionLimits{Max: 20, MaxPerKey: 10}}).Handler()})
	for _, seed := range []string{
		initBody,
		`{"jsonrpc":"2.0","id":"x","method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"search_tools","arguments":{"query":"open an issue"}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"get_tool_schema","arguments":{"name":"create_issue","extra":1}}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, `{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":{},"method":"ping"}`, `{"method":"` + strings.Repeat("m", 100) + `"}`, `{`, ``,
	} {
		f.Add(seed, "2025-06-18", "")
	}
	f.Add(initBody, "9999-99-99", "no-such-session")
	for _, id := range []string{"1.5", "9223372036854775807", "1e20", `"a\ud800b"`} {
		f.Add(strings.Replace(initBody, `"id":1`, `"id":`+id, 1), "2025-06-18", "")
	}
	f.Fuzz(func(t *testing.T, body, version, session string) {
		r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		r.Header.Set("Authorization", "Bearer key-a")
		if version != "" {
			r.Header.Set("Mcp-Protocol-Version", version)
		}
		if session != "" {
			r.Header.Set("Mcp-Session-Id", session)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if rec.Code >= 500 && rec.Code != http.StatusServiceUnavailable {
			t.Fatalf("%d for %q: %s", rec.Code, body, rec.Body)
		}
		if rec.Code >= 400 {
			// The API's error, or the SDK's JSON-RPC one (whose echo of the
			// method and id is bounded by checkEnvelope).
			var e struct {
				Error json.RawMessage `json:"error"`
			}
			if json.Unmarshal(rec.Body.Bytes(), &e) != nil || len(e.Error) == 0 || rec.Body.Len() > 2048 {
				t.Fatalf("%d without a bounded JSON error: %q", rec.Code, rec.Body)
			}
		}
		if n := rec.Body.Len(); n > 64<<10 && n > 2*len(body) {
			t.Fatalf("a %d-byte answer to a %d-byte request", n, len(body))
		}
		// An answer carries the request's own id, or null.
		var sent, got struct{ ID json.RawMessage }
		answer := rec.Body.String()
		if _, data, ok := strings.Cut(answer, "data: "); ok {
			answer, _, _ = strings.Cut(data, "\n")
		}
		if json.Unmarshal([]byte(body), &sent) == nil && json.Unmarshal([]byte(answer), &got) == nil &&
			len(got.ID) > 0 && string(got.ID) != "null" && !sameJSONValue(got.ID, sent.ID) {
			t.Fatalf("answered with id %s a request with id %s", got.ID, sent.ID)
		}
	})
}
