package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolsearch/toolsearch/pkg/access"
	"github.com/toolsearch/toolsearch/pkg/logbuf"
)

// TestConfirmDestructive: a call to a destructive tool is forwarded only
// on an explicit accept (elicitation) or confirm argument, as the policy
// of the deployment or the key says; decline, cancel and timeout are
// distinct outcomes, each logged without the arguments and counted.
func TestConfirmDestructive(t *testing.T) {
	var cleared atomic.Int32
	wipe := func(s *mcp.Server) {
		// No annotations: destructive by inference from "clear".
		s.AddTool(&mcp.Tool{Name: "clear_alerts", Description: "Clear every active alert of a city.", InputSchema: map[string]any{
			"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				cleared.Add(1)
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "cleared"}}}, nil
			})
	}
	logs := &logbuf.Buffer{}
	reg := prometheus.NewRegistry()
	keys := []access.Key{
		{Name: "people", Hash: access.HashSecret("people-secret")},
		{Name: "argument", Hash: access.HashSecret("argument-secret")},
		{Name: "trusted", Hash: access.HashSecret("trusted-secret")},
	}
	policies := map[string]string{"argument": ConfirmArgument, "trusted": ConfirmOff}
	r := newRigWith(t, keys, Options{
		Logger: slog.New(slog.NewTextHandler(logs, nil)), Registerer: reg, ConfirmTimeout: 300 * time.Millisecond,
		KeyConfirm: func(c access.Caller) string { return policies[c.Key] },
	}, wipe)

	const secretArg = "Secret-City-42" // must never reach a log
	args := map[string]any{"name": "clear_alerts", "arguments": map[string]any{"city": secretArg}}
	withConfirm := map[string]any{"name": "clear_alerts", "confirm": true, "arguments": map[string]any{"city": secretArg}}
	tests := []struct {
		name    string
		token   string
		answer  string // the elicitation handler's action; "" declares no elicitation; "wait" never answers
		args    map[string]any
		called  bool
		text    string
		outcome string
		policy  string
	}{
		{"accept", "people-secret", "accept", args, true, "cleared", outcomeAccepted, ConfirmElicit},
		{"decline", "people-secret", "decline", args, false, "declined", outcomeDeclined, ConfirmElicit},
		{"cancel", "people-secret", "cancel", args, false, "dismissed", outcomeCancelled, ConfirmElicit},
		{"timeout", "people-secret", "wait", args, false, "did not answer", outcomeTimeout, ConfirmElicit},
		{"a model's confirm does not stand in for the user", "people-secret", "decline", withConfirm, false, "declined", outcomeDeclined, ConfirmElicit},
		{"no elicitation: refused with how to confirm", "people-secret", "", args, false, `"confirm": true`, outcomeRefused, ConfirmElicit},
		{"no elicitation: confirm argument", "people-secret", "", withConfirm, true, "cleared", outcomeArgument, ConfirmElicit},
		{"key policy require_confirm_argument: no question", "argument-secret", "accept", args, false, `"confirm": true`, outcomeRefused, ConfirmArgument},
		{"key policy require_confirm_argument: confirmed", "argument-secret", "decline", withConfirm, true, "cleared", outcomeArgument, ConfirmArgument},
		{"key policy off", "trusted-secret", "decline", args, true, "cleared", outcomeOff, ConfirmOff},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var asked atomic.Int32
			opts := &mcp.ClientOptions{}
			if tt.answer != "" {
				opts.ElicitationHandler = func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					asked.Add(1)
					if !strings.Contains(req.Params.Message, "weather/clear_alerts") || !strings.Contains(req.Params.Message, secretArg) {
						t.Errorf("the question does not show the tool and its arguments: %q", req.Params.Message)
					}
					if tt.answer == "wait" {
						<-ctx.Done()
						return nil, ctx.Err()
					}
					return &mcp.ElicitResult{Action: tt.answer}, nil
				}
			}
			cs := connectWith(t, r.url, tt.token, opts)
			before := cleared.Load()
			count := confirmations(reg, tt.policy, tt.outcome)
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "call_tool", Arguments: tt.args})
			if err != nil {
				t.Fatal(err)
			}
			if got := cleared.Load() - before; (got == 1) != tt.called || got > 1 {
				t.Errorf("upstream called %d times, want called=%v", got, tt.called)
			}
			if res.IsError == tt.called || !strings.Contains(text(res), tt.text) {
				t.Errorf("result isError=%v %q, want %q", res.IsError, text(res), tt.text)
			}
			if got := confirmations(reg, tt.policy, tt.outcome) - count; got != 1 {
				t.Errorf("%s/%s counted %v times, want 1", tt.policy, tt.outcome, got)
			}
			if tt.answer == "" && asked.Load() != 0 {
				t.Error("a client without elicitation was asked")
			}
		})
	}
	// A tool that is not destructive is never gated.
	cs := connectWith(t, r.url, "people-secret", &mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		t.Error("asked to confirm a read-only call")
		return &mcp.ElicitResult{Action: "decline"}, nil
	}})
	if res := call(t, cs, "call_tool", map[string]any{"name": "get_forecast", "arguments": map[string]any{"city": "Oslo"}}); res.IsError {
		t.Errorf("get_forecast: %q", text(res))
	}
	out := logs.String()
	if strings.Contains(out, secretArg) {
		t.Errorf("an argument's value reached the log:\n%s", out)
	}
	for _, o := range []string{outcomeAccepted, outcomeDeclined, outcomeCancelled, outcomeTimeout, outcomeRefused, outcomeArgument, outcomeOff} {
		if !strings.Contains(out, "outcome="+o) {
			t.Errorf("no log line for outcome %s", o)
		}
	}
}

// confirmations reads the confirmation counter of policy and outcome; -1
// when there is no such series.
func confirmations(reg *prometheus.Registry, policy, outcome string) float64 {
	return series(reg, "toolsearch_mcp_confirmations_total", map[string]string{"policy": policy, "outcome": outcome})
}

// series reads the counter or gauge series of name with labels; -1 when
// there is no such series.
func series(reg *prometheus.Registry, name string, labels map[string]string) float64 {
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			if maps.Equal(got, labels) {
				return m.GetCounter().GetValue() + m.GetGauge().GetValue()
			}
		}
	}
	return -1
}

func connectWith(t *testing.T, url, token string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, opts)
	cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer{token}}, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// TestConfirmRoutes: every kind of client completes a destructive call by
// one route, and none gets around the policy. A client that declared
// elicitation and takes an event stream is asked on the call's own
// response stream (no GET stream needed); one that reads plain JSON and
// keeps no GET stream cannot be asked, so it confirms with the argument.
func TestConfirmRoutes(t *testing.T) {
	var cleared atomic.Int32
	wipe := func(s *mcp.Server) {
		s.AddTool(&mcp.Tool{Name: "clear_alerts", Description: "Clear every active alert of a city.", InputSchema: map[string]any{"type": "object"}},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				cleared.Add(1)
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "cleared"}}}, nil
			})
	}
	r := newRigWith(t, []access.Key{{Name: "people", Hash: access.HashSecret("k")}}, Options{ConfirmTimeout: 5 * time.Second}, wipe)
	const elicitInit = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"elicitation":{}},"clientInfo":{"name":"raw","version":"1"}}}`
	open := func() string {
		resp, _ := post(t, r.url, "k", "", elicitInit)
		id := resp.Header.Get("Mcp-Session-Id")
		post(t, r.url, "k", id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		return id
	}
	// send POSTs body on session id, accepting accept.
	send := func(t *testing.T, id, accept, body string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, r.url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", accept)
		req.Header.Set("Authorization", "Bearer k")
		req.Header.Set("Mcp-Session-Id", id)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	callBody := func(confirm bool) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"call_tool","arguments":{"name":"clear_alerts","confirm":%v}}}`, confirm)
	}

	t.Run("event stream, no GET stream: asked on the call's stream", func(t *testing.T) {
		id := open()
		before := cleared.Load()
		resp := send(t, id, "application/json, text/event-stream", callBody(false))
		defer resp.Body.Close()
		if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
			t.Fatalf("call_tool answered %s, want an event stream", ct)
		}
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		var result string
		for sc.Scan() && result == "" {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var msg struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
				Result json.RawMessage `json:"result"`
			}
			json.Unmarshal([]byte(data), &msg)
			switch {
			case msg.Method == "elicitation/create":
				// The user accepts, on a POST of its own.
				post(t, r.url, "k", id, fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"action":"accept"}}`, msg.ID))
			case msg.Result != nil:
				result = string(msg.Result)
			}
		}
		if !strings.Contains(result, "cleared") || cleared.Load()-before != 1 {
			t.Errorf("result %s, upstream called %d times; want the call made after the user accepted", result, cleared.Load()-before)
		}
	})

	t.Run("plain JSON, no GET stream: the confirm argument", func(t *testing.T) {
		id := open()
		before := cleared.Load()
		jsonPost := func(body string) string {
			resp := send(t, id, "application/json", body)
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("answered %s, want application/json", ct)
			}
			return string(b)
		}
		if got := jsonPost(callBody(false)); !strings.Contains(got, `\"confirm\": true`) || cleared.Load() != before {
			t.Fatalf("without confirm: %s; want refused, saying how to confirm", got)
		}
		if got := jsonPost(callBody(true)); !strings.Contains(got, "cleared") || cleared.Load()-before != 1 {
			t.Errorf("with confirm: %s; want the call made", got)
		}
	})
}

// TestProgressReachesCaller: an upstream's progress on a forwarded call
// reaches the client that sent a progressToken, under its own token.
func TestProgressReachesCaller(t *testing.T) {
	work := func(s *mcp.Server) {
		s.AddTool(&mcp.Tool{Name: "long_report", Description: "Compile a long weather report.", InputSchema: map[string]any{"type": "object"},
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
			func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				for i := range 4 {
					req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Progress: float64(i + 1), Total: 4, Message: "compiling"})
					time.Sleep(20 * time.Millisecond) // progress comes as work goes on
				}
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "report"}}}, nil
			})
	}
	r := newRigWith(t, []access.Key{{Name: "people", Hash: access.HashSecret("k")}}, Options{}, work)
	var mu sync.Mutex
	var got []any
	cs := connectWith(t, r.url, "k", &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
		mu.Lock()
		got = append(got, req.Params.ProgressToken)
		mu.Unlock()
	}})
	params := &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{"name": "long_report"}}
	params.SetProgressToken("mine-1")
	res, err := cs.CallTool(t.Context(), params)
	if err != nil || res.IsError {
		t.Fatalf("call_tool: %v %q", err, text(res))
	}
	waitFor(t, "four progress notifications", func() bool { mu.Lock(); defer mu.Unlock(); return len(got) == 4 })
	for _, tok := range got {
		if tok != "mine-1" {
			t.Errorf("progress arrived under token %v, want the client's own", tok)
		}
	}
}

// TestProgressFloodIsBounded: an upstream that sends a flood of progress,
// each with a long message, reaches the client with a bounded number of
// notifications, each message clipped; the call's result still arrives.
// (What the call reads, progress included, is within the upstream answer
// limit: 500 of 2 KiB is 1 MiB.)
func TestProgressFloodIsBounded(t *testing.T) {
	const sent = 500
	long := strings.Repeat("x", 2<<10)
	work := func(s *mcp.Server) {
		s.AddTool(&mcp.Tool{Name: "chatty", Description: "Report progress far too often.", InputSchema: map[string]any{"type": "object"},
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
			func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				for i := range sent {
					req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Progress: float64(i + 1), Total: sent, Message: long})
				}
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
			})
	}
	r := newRigWith(t, []access.Key{{Name: "people", Hash: access.HashSecret("k")}}, Options{}, work)
	var mu sync.Mutex
	var got, longest int
	cs := connectWith(t, r.url, "k", &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
		mu.Lock()
		got++
		longest = max(longest, len(req.Params.Message))
		mu.Unlock()
	}})
	params := &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{"name": "chatty"}}
	params.SetProgressToken("mine-1")
	start := time.Now()
	res, err := cs.CallTool(t.Context(), params)
	if err != nil || res.IsError || text(res) != "done" {
		t.Fatalf("call_tool: %v %q", err, text(res))
	}
	took := time.Since(start)
	time.Sleep(100 * time.Millisecond) // notifications still on their way
	mu.Lock()
	defer mu.Unlock()
	// The burst, and the rate over the call's own time.
	most := progressBurst + int(took.Seconds()*progressRate) + 1
	if got == 0 || got > most {
		t.Errorf("%d of %d progress notifications relayed in %v; want 1 to %d", got, sent, took, most)
	}
	if longest > maxProgressMessage+len("…") {
		t.Errorf("a relayed message of %d bytes; want at most %d", longest, maxProgressMessage)
	}
}
