package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// What requests in flight rely on outlives the signal: a call relayed to
// an upstream through the drain gets every progress notice and its result,
// and feedback sent during the drain delay is written. Both stopped at the
// signal before: server-everything's five steps reached a caller as one,
// and the feedback stayed unwritten.
func TestDrainKeepsWhatRequestsRelyOn(t *testing.T) {
	const notices = 5
	upSrv := mcp.NewServer(&mcp.Implementation{Name: "up", Version: "1"}, nil)
	upSrv.AddTool(&mcp.Tool{Name: "work", Description: "Work a while, reporting progress.", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			for i := range notices {
				if tok := req.Params.GetProgressToken(); tok != nil {
					_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: float64(i + 1), Total: notices})
				}
				time.Sleep(150 * time.Millisecond)
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
		})
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return upSrv }, nil))
	defer up.Close()
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte("upstreams:\n  - {name: up, url: "+up.URL+"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	base, logs, stop := startServe(t, map[string]string{"TOOLSEARCH_DRAIN_DELAY": "3s"}, "-config", cfg)

	var got atomic.Int32
	first := make(chan struct{}, 1)
	client := mcp.NewClient(&mcp.Implementation{Name: "drain-test", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) {
			got.Add(1)
			select {
			case first <- struct{}{}:
			default:
			}
		}})
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: base + "/mcp", MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	type answer struct {
		res *mcp.CallToolResult
		err error
	}
	called := make(chan answer, 1)
	go func() {
		params := &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{"name": "up/work", "arguments": map[string]any{}}}
		params.SetProgressToken("drain")
		res, err := cs.CallTool(t.Context(), params)
		called <- answer{res, err}
	}()
	<-first
	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()

	// During the drain delay: a search, and feedback on it.
	waitDraining(t, base)
	code, ans := postSearch(t, base, `{"query":"work a while reporting progress"}`)
	id, _ := ans["search_id"].(string)
	if code != http.StatusOK || id == "" {
		t.Fatalf("a search during the drain: %d %v", code, ans)
	}
	resp, err := http.Post(base+"/mcp/tool-search/feedback", "application/json", strings.NewReader(`{"search_id":"`+id+`","used":["up/work"]}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("feedback during the drain: %d", resp.StatusCode)
	}
	if n := recorded(t, base); n < 1 {
		t.Errorf("feedback sent during the drain was not written (%v recorded)", n)
	}

	a := <-called
	switch {
	case a.err != nil:
		t.Errorf("the call in flight: %v", a.err)
	case a.res.IsError || len(a.res.Content) == 0:
		t.Errorf("the call in flight answered %+v", a.res)
	case a.res.Content[0].(*mcp.TextContent).Text != "done":
		t.Errorf("the call in flight answered %q", a.res.Content[0].(*mcp.TextContent).Text)
	}
	if n := got.Load(); n != notices {
		t.Errorf("%d of %d progress notices reached the caller through the drain", n, notices)
	}
	if err := <-stopped; err != nil {
		t.Errorf("serve returned %v:\n%s", err, logs)
	}
}

// waitDraining returns once /readyz fails for the drain.
func waitDraining(t *testing.T, base string) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if resp, err := http.Get(base + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusServiceUnavailable {
				return
			}
		}
	}
	t.Fatal("/readyz never failed for the drain")
}

// recorded is status' count of learning events written, once it is not 0
// or after a second.
func recorded(t *testing.T, base string) float64 {
	t.Helper()
	var n float64
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		resp, err := http.Get(base + "/mcp/tool-search/status")
		if err != nil {
			t.Fatal(err)
		}
		var st struct {
			Learning struct {
				Recorded float64 `json:"recorded"`
			} `json:"learning"`
		}
		err = json.NewDecoder(resp.Body).Decode(&st)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if n = st.Learning.Recorded; n > 0 {
			break
		}
	}
	return n
}
