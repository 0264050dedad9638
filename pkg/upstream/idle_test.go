package upstream

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsearch/toolsearch/pkg/internal/keepalive"
)

// TestCallAfterIdleKeepAlive: a call made after the upstream's keep-alive
// has run out on every pooled connection goes out on a new one and
// succeeds. The pool keeps a connection for less than the server will.
func TestCallAfterIdleKeepAlive(t *testing.T) {
	const serverIdle = 300 * time.Millisecond
	srv := mcp.NewServer(&mcp.Implementation{Name: "idle", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
		})
	hs := httptest.NewUnstartedServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	hs.Listener = keepalive.Listener(hs.Listener, serverIdle)
	hs.Start()
	t.Cleanup(hs.Close)

	m := startWith(t, []Config{{Name: "u", URL: hs.URL, Refresh: time.Hour, Health: time.Hour}}, Options{idle: serverIdle / 3})
	for i := range 3 {
		if i > 0 {
			time.Sleep(2 * serverIdle)
		}
		res, err := m.Call(t.Context(), "u", "echo", json.RawMessage(`{}`), CallOptions{})
		if err != nil || res.IsError {
			t.Fatalf("call %d, after the upstream's keep-alive ran out: %v %+v", i, err, res)
		}
	}
}
