package mcpserver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/toolsearch/toolsearch/pkg/access"
	"github.com/toolsearch/toolsearch/pkg/catgen"
	"github.com/toolsearch/toolsearch/pkg/catgen/gentest"
	"github.com/toolsearch/toolsearch/pkg/embedding"
	"github.com/toolsearch/toolsearch/pkg/httpapi"
	"github.com/toolsearch/toolsearch/pkg/search"
)

// TestRegexSpendsBudget: search_tools_regex pays for the text it reads
// from the key's budget, as the HTTP endpoint's regex does. A key that
// matched 10,000 tools' descriptions has that many units fewer for its
// next requests than one that matched their names only.
func TestRegexSpendsBudget(t *testing.T) {
	keys := []access.Key{{Name: "a", Hash: sha256.Sum256([]byte("key-a"))}, {Name: "b", Hash: sha256.Sum256([]byte("key-b"))}}
	const burst = 40
	svc, url := generatedAPI(t, 10000, keys, httpapi.Options{SearchRate: 0.001, SearchBurst: burst})
	names, text := 0, 0
	for _, tool := range svc.Current().Catalog.Tools() {
		names += len(tool.Name)
		text += len(tool.Name) + min(len(tool.Description), 1024)
	}
	cheap, dear := names/search.RegexUnitBytes, text/search.RegexUnitBytes
	if dear-cheap < 2 {
		t.Fatalf("the catalog's descriptions are %d units beyond its names: too few to tell", dear-cheap)
	}

	// left is how many requests the key may still make after a session
	// (initialize and its notification) and one regex call.
	left := func(key string, descriptions bool) int {
		resp, _ := post(t, url, key, "", initBody)
		id := resp.Header.Get("Mcp-Session-Id")
		post(t, url, key, id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		args := `{"pattern":"^zz[a-z]+q$"}`
		if descriptions {
			args = `{"pattern":"^zz[a-z]+q$","descriptions":true}`
		}
		if resp, body := post(t, url, key, id, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"search_tools_regex","arguments":`+args+`}}`); resp.StatusCode != http.StatusOK || bytes.Contains([]byte(body), []byte(`"isError":true`)) {
			t.Fatalf("regex: %d %s", resp.StatusCode, body)
		}
		for n := range burst {
			resp, body := post(t, url, key, id, `{"jsonrpc":"2.0","id":3,"method":"ping"}`)
			if resp.StatusCode != http.StatusTooManyRequests {
				continue
			}
			// Refused as the rest of /mcp answers: a JSON-RPC error,
			// with the wait in Retry-After.
			var e struct {
				JSONRPC string
				Error   struct {
					Code int
					Data struct{ Reason string }
				}
			}
			if json.Unmarshal([]byte(body), &e) != nil || e.JSONRPC != "2.0" || e.Error.Code != -32600 || e.Error.Data.Reason != "rate_limited" || resp.Header.Get("Retry-After") == "" {
				t.Errorf("refused: Retry-After %q %s, want a JSON-RPC error saying rate_limited", resp.Header.Get("Retry-After"), body)
			}
			return n
		}
		t.Fatalf("%s: never refused", key)
		return 0
	}
	a, b := left("key-a", true), left("key-b", false)
	if want := burst - 3 - dear; a != want {
		t.Errorf("after a regex over descriptions: %d requests left, want %d (%d units of text)", a, want, dear)
	}
	if want := burst - 3 - cheap; b != want {
		t.Errorf("after a regex over names: %d requests left, want %d (%d units of text)", b, want, cheap)
	}
}

// TestOverBudgetIsToolError: a call that finds its key in debt (another
// of its requests spent the budget meanwhile) answers an isError result
// saying when to retry, which a model can act on, not a protocol error.
func TestOverBudgetIsToolError(t *testing.T) {
	s := New(defaultService(t), Options{})
	over := &access.OverBudgetError{RetryAfter: 2500 * time.Millisecond, Rate: 50, Burst: 100}
	err := s.toolError(fmt.Errorf("regex: %w", over))
	var oe *access.OverBudgetError
	var rpc *jsonrpc.Error
	if !errors.As(err, &oe) || errors.As(err, &rpc) || !strings.Contains(err.Error(), "retry after 3 s") {
		t.Errorf("toolError = %v (%T), want the budget's own error", err, err)
	}
}

// generatedAPI serves the MCP endpoint behind the HTTP API (with opts) on
// a generated catalog of n tools (package catgen) with keys.
func generatedAPI(t *testing.T, n int, keys []access.Key, opts httpapi.Options) (*search.Service, string) {
	t.Helper()
	cat := gentest.Catalog(t, catgen.Spec{Tools: n, Seed: 1})
	svc := search.New(search.Config{Embedder: embedding.NewLocal(64)})
	if _, err := svc.Build(t.Context(), &search.Setup{Catalog: cat, Keys: keys}); err != nil {
		t.Fatal(err)
	}
	srv := New(svc, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); srv.Run(ctx) }()
	opts.MCP = srv.Handler()
	api := httptest.NewServer(httpapi.NewServer(svc, opts))
	t.Cleanup(func() { api.Close(); cancel(); <-done })
	return svc, api.URL + "/mcp"
}
