package upstream

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// keepAliveListener gives its connections a server's keep-alive timeout
// the hard way: a request that arrives on a connection idle past it finds
// the connection closed, unanswered. A real server (Node's http, uvicorn:
// 5 s) closes on a timer, and a request already sent when the close
// crosses it meets the same fate; this makes the crossing certain.
type keepAliveListener struct {
	net.Listener
	idle time.Duration
}

func (l keepAliveListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &keepAliveConn{Conn: c, idle: l.idle}, nil
}

type keepAliveConn struct {
	net.Conn
	idle time.Duration
	mu   sync.Mutex
	last time.Time // the last answer's write
}

func (c *keepAliveConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	c.last = time.Now()
	c.mu.Unlock()
	return c.Conn.Write(p)
}

func (c *keepAliveConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.mu.Lock()
	stale := n > 0 && !c.last.IsZero() && time.Since(c.last) > c.idle
	c.mu.Unlock()
	if stale {
		c.Conn.Close()
		return 0, io.EOF
	}
	return n, err
}

// keepAliveUpstream serves an MCP server with one tool, echo, until the
// test ends, its connections closed after serverIdle as keepAliveListener
// closes them. It returns the server's URL and whether any request
// carried an Idempotency-Key header.
func keepAliveUpstream(t *testing.T, serverIdle time.Duration) (string, *atomic.Bool) {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "idle", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	keyed := new(atomic.Bool)
	hs := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := r.Header["Idempotency-Key"]; ok {
			keyed.Store(true)
		}
		h.ServeHTTP(w, r)
	}))
	hs.Listener = keepAliveListener{Listener: hs.Listener, idle: serverIdle}
	hs.Start()
	t.Cleanup(hs.Close)
	return hs.URL, keyed
}

// TestCallAfterIdleKeepAlive: a call made after the upstream's keep-alive
// has run out on every pooled connection goes out on a new one and
// succeeds. The pool keeps a connection for less than the server will.
func TestCallAfterIdleKeepAlive(t *testing.T) {
	const serverIdle = 300 * time.Millisecond
	url, _ := keepAliveUpstream(t, serverIdle)
	m := startWith(t, []Config{{Name: "u", URL: url, Refresh: time.Hour, Health: time.Hour}}, Options{idle: serverIdle / 3})
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

// TestListAndPingRepeatedOnClosedConnection: with connections kept past
// the upstream's keep-alive (one shorter than idleConn), a listing and a
// ping that meet their connection closed under them are sent again on a
// new one: they are safe to repeat. No Idempotency-Key reaches the
// upstream.
func TestListAndPingRepeatedOnClosedConnection(t *testing.T) {
	const serverIdle = 100 * time.Millisecond
	url, keyed := keepAliveUpstream(t, serverIdle)
	m := startWith(t, []Config{{Name: "u", URL: url, Refresh: time.Hour, Health: time.Hour}}, Options{idle: time.Hour})
	u := m.byName["u"]
	cs, err := u.connect(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		time.Sleep(3 * serverIdle)
		if tools, err := m.list(t.Context(), cs); err != nil || len(tools) != 1 {
			t.Fatalf("listing %d after a pause: %d tools, %v", i, len(tools), err)
		}
		time.Sleep(3 * serverIdle)
		if err := m.ping(t.Context(), cs, time.Minute); err != nil {
			t.Fatalf("ping %d after a pause: %v", i, err)
		}
	}
	if keyed.Load() {
		t.Error("an Idempotency-Key header reached the upstream; the transport's marker must not be sent")
	}
}
