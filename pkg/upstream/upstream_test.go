package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// fakeUpstream is an in-process MCP server over Streamable HTTP whose
// transport can be made to fail.
type fakeUpstream struct {
	srv  *mcp.Server
	http *httptest.Server
	down atomic.Bool
	hang atomic.Bool // accept requests and answer none until it is cleared
	// forget400 answers a session the upstream does not know 400, as
	// server-everything's express front does, rather than the SDK's 404.
	forget400 atomic.Bool
	handler   atomic.Pointer[mcp.StreamableHTTPHandler]
	// stateless serves protocol 2026-07-28 (newStatelessFake).
	stateless bool
	// errors counts what the upstream's MCP server logged as errors, as
	// an operator's alert on its log would.
	errors errorLog
}

// errorLog is a slog.Handler that counts error records and keeps the
// last one's message.
type errorLog struct {
	n    atomic.Int32
	last atomic.Pointer[string]
}

func (l *errorLog) Enabled(_ context.Context, lv slog.Level) bool { return lv >= slog.LevelError }
func (l *errorLog) Handle(_ context.Context, r slog.Record) error {
	msg := r.Message
	r.Attrs(func(a slog.Attr) bool { msg += " " + a.String(); return true })
	l.last.Store(&msg)
	l.n.Add(1)
	return nil
}
func (l *errorLog) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *errorLog) WithGroup(string) slog.Handler      { return l }

// restart forgets every session, as a restarted upstream process does.
func (f *fakeUpstream) restart() {
	f.handler.Store(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return f.srv }, &mcp.StreamableHTTPOptions{Stateless: f.stateless}))
}

// newStatelessFake is newFake at protocol 2026-07-28, which the go-sdk
// serves only without sessions; its stateful handler, newFake's, falls
// back to 2025-11-25.
func newStatelessFake(tb testing.TB, pageSize, tools int) *fakeUpstream {
	tb.Helper()
	f := newFake(tb, pageSize, tools)
	f.stateless = true
	f.restart()
	return f
}

// protocols make an upstream of each kind toolsearch meets: with
// sessions (2025-11-25) and without (2026-07-28).
var protocols = []struct {
	name string
	fake func(tb testing.TB, pageSize, tools int) *fakeUpstream
}{{"2025-11-25", newFake}, {"2026-07-28", newStatelessFake}}

func newFake(tb testing.TB, pageSize, tools int) *fakeUpstream {
	tb.Helper()
	f := &fakeUpstream{}
	f.srv = mcp.NewServer(&mcp.Implementation{Name: "fake", Version: "1"}, &mcp.ServerOptions{PageSize: pageSize, Logger: slog.New(&f.errors)})
	for i := range tools {
		f.add(fmt.Sprintf("tool_%d", i), fmt.Sprintf("Does thing number %d.", i))
	}
	f.restart()
	f.http = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f.down.Load() {
			http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
			return
		}
		for f.hang.Load() { // until the client gives up or the hang ends
			select {
			case <-r.Context().Done():
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
		if f.forget400.Load() {
			w = &unknownSession400{ResponseWriter: w}
		}
		f.handler.Load().ServeHTTP(w, r)
	}))
	tb.Cleanup(f.http.Close)
	return f
}

func (f *fakeUpstream) add(name, desc string) {
	f.srv.AddTool(&mcp.Tool{Name: name, Description: desc,
		InputSchema: map[string]any{"type": "object", "properties": map[string]any{"n": map[string]any{"type": "number"}}}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var args struct{ N float64 }
			json.Unmarshal(req.Params.Arguments, &args)
			if args.N < 0 {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "n must not be negative"}}}, nil
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("%s(%v) done", name, args.N)}}}, nil
		})
}

func waitFor(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func names(m *Manager) []string {
	var out []string
	for _, p := range m.Parts() {
		for _, s := range p.Servers {
			for _, t := range s.Tools {
				out = append(out, s.Name+"/"+t.Name)
			}
		}
	}
	slices.Sort(out)
	return out
}

func start(tb testing.TB, cfgs []Config, onChange func()) *Manager {
	tb.Helper()
	return startWith(tb, cfgs, Options{OnChange: onChange})
}

// startWith runs a Manager of cfgs under opts until the test ends, and
// returns it once every upstream has been tried.
func startWith(tb testing.TB, cfgs []Config, opts Options) *Manager {
	tb.Helper()
	m, err := New(cfgs, opts)
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	tb.Cleanup(func() {
		cancel()
		<-done
	})
	m.WaitFirst(tb.Context())
	return m
}

func TestPaginatedListing(t *testing.T) {
	f := newFake(t, 2, 5)
	m := start(t, []Config{{Name: "fake", URL: f.http.URL}}, nil)
	if got := names(m); len(got) != 5 || got[0] != "fake/tool_0" {
		t.Errorf("tools = %v, want all 5 across 3 pages", got)
	}
	st := m.Status()[0]
	if st.State != "connected" || st.Tools != 5 || st.Breaker != Closed || st.LastSuccess == nil || st.Stale {
		t.Errorf("status = %+v", st)
	}
}

// TestListingBound: an upstream may list at most maxListedTools tools,
// however it pages them: a last page, or an only one, that crosses the
// bound is refused as a cursor that goes on past it is, and the upstream
// contributes no tools (it never had good ones) until it lists fewer.
func TestListingBound(t *testing.T) {
	for _, tt := range []struct {
		name            string
		pageSize, tools int
		ok              bool
	}{
		{"at the bound, pages", 4000, maxListedTools, true},
		{"past it, on the last page", 4000, maxListedTools + 1, false},
		{"past it, on the only page", 2 * maxListedTools, maxListedTools + 1, false},
		{"past it, with a cursor", 4000, maxListedTools + 2001, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, tt.pageSize, tt.tools)
			m := start(t, []Config{{Name: "fake", URL: f.http.URL, Refresh: time.Hour}}, nil)
			st := m.Status()[0]
			got := len(names(m))
			switch {
			case tt.ok && (got != tt.tools || st.LastError != ""):
				t.Errorf("%d tools listed, error %q; want all %d", got, st.LastError, tt.tools)
			case !tt.ok && (got != 0 || !strings.Contains(st.LastError, fmt.Sprintf("over %d tools", maxListedTools))):
				t.Errorf("%d tools listed, error %q; want none, and the bound named", got, st.LastError)
			}
		})
	}
}

// TestEmptyPages: a cursor that never ends, on pages of no tools, stayed
// under the listing's bytes for 30,000 requests until its 15 s timeout;
// it now ends after emptyPages pages more than tools, saying why. A few
// empty pages before the tools are still read through.
func TestEmptyPages(t *testing.T) {
	for _, tt := range []struct {
		name  string
		page  func(n int) *mcp.ListToolsResult // the nth page, from 1
		tools int                              // listed; -1: refused
		most  int64                            // pages asked for, at most
	}{
		{"endless and empty", func(n int) *mcp.ListToolsResult {
			return &mcp.ListToolsResult{Tools: []*mcp.Tool{}, NextCursor: fmt.Sprint(n)}
		}, -1, emptyPages},
		{"endless, a tool every tenth page", func(n int) *mcp.ListToolsResult {
			r := &mcp.ListToolsResult{Tools: []*mcp.Tool{}, NextCursor: fmt.Sprint(n)}
			if n%10 == 0 {
				r.Tools = append(r.Tools, &mcp.Tool{Name: fmt.Sprintf("t%d", n), InputSchema: map[string]any{"type": "object"}})
			}
			return r
		}, -1, 100},
		{"three empty pages, then tools", func(n int) *mcp.ListToolsResult {
			if n <= 3 {
				return &mcp.ListToolsResult{Tools: []*mcp.Tool{}, NextCursor: fmt.Sprint(n)}
			}
			return &mcp.ListToolsResult{Tools: []*mcp.Tool{{Name: "a", InputSchema: map[string]any{"type": "object"}}, {Name: "b", InputSchema: map[string]any{"type": "object"}}}}
		}, 2, 4},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := mcp.NewServer(&mcp.Implementation{Name: "fake", Version: "1"}, nil)
			var pages atomic.Int64
			srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
				return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
					if method != "tools/list" {
						return next(ctx, method, req)
					}
					return tt.page(int(pages.Add(1))), nil
				}
			})
			hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
			t.Cleanup(hs.Close)
			m := start(t, []Config{{Name: "fake", URL: hs.URL, Refresh: time.Hour}}, nil)
			st, got := m.Status()[0], len(names(m))
			switch {
			case tt.tools >= 0 && (got != tt.tools || st.LastError != ""):
				t.Errorf("%d tools, error %q; want %d", got, st.LastError, tt.tools)
			case tt.tools < 0 && (got != 0 || !strings.Contains(st.LastError, "listing goes on")):
				t.Errorf("%d tools, error %q; want none, and why", got, st.LastError)
			}
			if n := pages.Load(); n > tt.most {
				t.Errorf("%d pages asked for; want at most %d", n, tt.most)
			}
		})
	}
}

func TestListChanged(t *testing.T) {
	f := newFake(t, 0, 2)
	var changes atomic.Int32
	// A long refresh: only the notification can explain a prompt re-list.
	m := start(t, []Config{{Name: "fake", URL: f.http.URL, Refresh: time.Hour}}, func() { changes.Add(1) })
	base := changes.Load()
	f.add("brand_new", "A tool added at runtime.")
	waitFor(t, "the added tool", func() bool { return slices.Contains(names(m), "fake/brand_new") })
	f.srv.RemoveTools("tool_0")
	waitFor(t, "the removed tool to go", func() bool { return !slices.Contains(names(m), "fake/tool_0") })
	if changes.Load()-base < 2 {
		t.Errorf("onChange called %d times for two changes", changes.Load()-base)
	}
}

// TestListChangedFloodIsPaced: an upstream whose tools change again and
// again, each change announced, is listed at most once a listGap after a
// burst of listBurst, not back to back; its last change is still listed.
func TestListChangedFloodIsPaced(t *testing.T) {
	f := newFake(t, 0, 1)
	var changes atomic.Int32
	m := start(t, []Config{{Name: "fake", URL: f.http.URL, Refresh: time.Hour}}, func() { changes.Add(1) })
	base := changes.Load()
	// About 1.5 listGaps of additions, each announced: unpaced, a listing
	// (a millisecond or two here) would follow nearly every one.
	const adds = 150
	for i := range adds {
		f.add(fmt.Sprintf("flood_%d", i), "A tool added in a flood.")
		time.Sleep(listGap * 3 / 2 / adds)
	}
	waitFor(t, "the last added tool", func() bool { return slices.Contains(names(m), fmt.Sprintf("fake/flood_%d", adds-1)) })
	// The burst, then one a listGap (1.5 over the flood), and one more for
	// a flood that ends just after a listing.
	if n, most := changes.Load()-base, int32(listBurst+3); n > most {
		t.Errorf("%d listings changed the tools during a flood of %d notices over 1.5 listGaps; want at most %d", n, adds, most)
	}
}

func TestBreaker(t *testing.T) {
	f := newFake(t, 0, 3)
	m := start(t, []Config{{Name: "fake", URL: f.http.URL, Refresh: 20 * time.Millisecond,
		BreakerFailures: 2, BreakerCooldown: 300 * time.Millisecond, Timeout: time.Second}}, nil)
	f.down.Store(true)
	waitFor(t, "the breaker to open", func() bool { return m.Status()[0].Breaker == Open })
	st := m.Status()[0]
	if !st.Stale || st.Tools != 3 || len(names(m)) != 3 || st.LastError == "" || st.Failures < 2 {
		t.Errorf("open breaker: status %+v, tools %v; want the last good tools kept, stale", st, names(m))
	}
	if _, err := m.Call(t.Context(), "fake", "tool_1", nil, CallOptions{}); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Call with the breaker open = %v, want ErrUnavailable", err)
	}
	type series = struct {
		name   string
		labels map[string]string
		value  float64
	}
	up := map[string]string{"upstream": "fake"}
	with := func(k, v string) map[string]string { return map[string]string{"upstream": "fake", k: v} }
	checkMetrics(t, m, "breaker open", []series{
		{"toolsearch_upstream_up", up, 0},
		{"toolsearch_upstream_breaker", with("state", "open"), 1},
		{"toolsearch_upstream_breaker", with("state", "closed"), 0},
		{"toolsearch_upstream_stale", up, 1},
		{"toolsearch_upstream_tools", up, 3},
		{"toolsearch_upstream_last_success_timestamp_seconds", up, -1}, // the first listing succeeded
		{"toolsearch_upstream_lists_total", with("result", "error"), -2},
		{"toolsearch_upstream_lists_total", with("result", "ok"), -1},
		{"toolsearch_upstream_calls_total", with("result", "unavailable"), 1},
	})
	f.down.Store(false)
	waitFor(t, "the breaker to close", func() bool { return m.Status()[0].Breaker == Closed })
	if st := m.Status()[0]; st.Stale || st.State != "connected" || st.Failures != 0 {
		t.Errorf("after recovery: %+v", st)
	}
	if _, err := m.Call(t.Context(), "fake", "tool_1", nil, CallOptions{}); err != nil {
		t.Fatal(err)
	}
	checkMetrics(t, m, "recovered", []series{
		{"toolsearch_upstream_up", up, 1},
		{"toolsearch_upstream_breaker", with("state", "closed"), 1},
		{"toolsearch_upstream_stale", up, 0},
		{"toolsearch_upstream_calls_total", with("result", "ok"), 1},
	})
}

func TestCall(t *testing.T) {
	f := newFake(t, 0, 2)
	m := start(t, []Config{{Name: "fake", URL: f.http.URL}}, nil)
	res, err := m.Call(t.Context(), "fake", "tool_1", json.RawMessage(`{"n":3}`), CallOptions{})
	if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "tool_1(3) done" {
		t.Fatalf("Call = %+v, %v", res, err)
	}
	res, err = m.Call(t.Context(), "fake", "tool_1", json.RawMessage(`{"n":-1}`), CallOptions{})
	if err != nil || !res.IsError || res.Content[0].(*mcp.TextContent).Text != "n must not be negative" {
		t.Errorf("an isError result must pass through unchanged: %+v, %v", res, err)
	}
	if _, err := m.Call(t.Context(), "nope", "x", nil, CallOptions{}); err == nil {
		t.Error("Call to an unknown upstream succeeded")
	}
}

func TestSecretsStayOut(t *testing.T) {
	m, err := New([]Config{{Name: "gh", URL: "http://user:pw@127.0.0.1:1/mcp?token=abc", Headers: map[string]string{"Authorization": "Bearer ghp_secret123"},
		Refresh: time.Hour, Timeout: 200 * time.Millisecond}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	m.WaitFirst(t.Context())
	b, _ := json.Marshal(m.Status())
	cancel()
	<-done
	if !strings.Contains(string(b), "connection refused") {
		t.Fatalf("status has no error to check: %s", b)
	}
	for _, secret := range []string{"user:pw", "token=abc", "ghp_secret123"} {
		if strings.Contains(string(b), secret) {
			t.Errorf("status leaks %q: %s", secret, b)
		}
	}
}

// TestCallAfterUpstreamRestart: a restarted upstream has forgotten the
// session. The first call notices, reconnects and is sent again (it never
// ran upstream), all as one logical call that succeeded: nothing counts
// against the upstream. A 400 on a session that served before is the
// restart too (forgets): the first call after it failed "Bad Request".
func TestCallAfterUpstreamRestart(t *testing.T) {
	for _, forget := range forgets {
		t.Run(forget.name, func(t *testing.T) {
			f := newFake(t, 0, 2)
			f.forget400.Store(forget.with400)
			m := start(t, []Config{{Name: "u", URL: f.http.URL, Refresh: time.Hour, BreakerFailures: 3}}, nil)
			if _, err := m.Call(t.Context(), "u", "tool_0", json.RawMessage(`{"n":1}`), CallOptions{}); err != nil {
				t.Fatalf("call before the restart: %v", err)
			}
			f.restart()
			for i := range 3 {
				res, err := m.Call(t.Context(), "u", "tool_1", json.RawMessage(`{"n":2}`), CallOptions{})
				if err != nil || res.IsError {
					t.Fatalf("call %d after the restart: %v %+v", i, err, res)
				}
			}
			st := m.Status()[0]
			if st.CallsFailing || st.State != "connected" || st.Failures != 0 || st.Breaker != Closed {
				t.Errorf("status after a recovered restart: %+v; want the upstream connected and nothing counted against it", st)
			}
		})
	}
}

// TestCallReconnectListsAgain: a call that finds its session forgotten
// (the upstream restarted as a new version) connects afresh, and the new
// version's tools are listed: only the loop lists, and it had no reason
// to, so a tool the new version brought waited for the refresh.
func TestCallReconnectListsAgain(t *testing.T) {
	f := newFake(t, 0, 1)
	m := start(t, []Config{{Name: "u", URL: f.http.URL, Refresh: time.Hour, Health: time.Hour}}, nil)
	// The new version: other tools, on a server of its own (the old
	// session's stream, left open in this process, hears nothing of it).
	f.srv = mcp.NewServer(&mcp.Implementation{Name: "fake", Version: "2"}, nil)
	f.add("tool_0", "Does thing number 0.")
	f.add("tool_new", "A tool the new version brings.")
	f.restart()
	if res, err := m.Call(t.Context(), "u", "tool_0", json.RawMessage(`{"n":1}`), CallOptions{}); err != nil || res.IsError {
		t.Fatalf("the call after the restart: %v %+v", err, res)
	}
	waitFor(t, "the new version's tool listed", func() bool { return slices.Contains(names(m), "u/tool_new") })
}

// forgets are the two ways an upstream answers a session it forgot: the
// SDKs' handlers 404, server-everything's express front (and servers
// written after it) 400.
var forgets = []struct {
	name    string
	with400 bool
}{{"404", false}, {"400", true}}

// TestCallTransportFailuresCount: calls that fail in transport count in
// the breaker, which opens, and status says so.
func TestCallTransportFailuresCount(t *testing.T) {
	f := newFake(t, 0, 1)
	m := start(t, []Config{{Name: "u", URL: f.http.URL, Refresh: time.Hour, BreakerFailures: 2, BreakerCooldown: time.Hour}}, nil)
	f.down.Store(true)
	for range 2 {
		if _, err := m.Call(t.Context(), "u", "tool_0", nil, CallOptions{}); err == nil {
			t.Fatal("a call to a down upstream succeeded")
		}
	}
	st := m.Status()[0]
	if st.Failures < 2 || st.Breaker != Open || !st.CallsFailing || st.LastCallError == "" {
		t.Errorf("status after failed calls: %+v; want failures counted and the breaker open", st)
	}
	if _, err := m.Call(t.Context(), "u", "tool_0", nil, CallOptions{}); !errors.Is(err, ErrUnavailable) {
		t.Errorf("call with the breaker open: %v, want ErrUnavailable", err)
	}
}

// TestHealthNoticesAQuietUpstream: an upstream that goes down or stops
// answering between listings is failing in status, and counted by the
// breaker, within a few health intervals, not at the next refresh (an
// hour here); once it answers again it is connected.
func TestHealthNoticesAQuietUpstream(t *testing.T) {
	for _, p := range protocols {
		for _, tt := range []struct {
			name  string
			quiet func(*fakeUpstream, bool)
		}{
			{"down", func(f *fakeUpstream, on bool) { f.down.Store(on) }},
			{"hung", func(f *fakeUpstream, on bool) { f.hang.Store(on) }},
		} {
			t.Run(p.name+"/"+tt.name, func(t *testing.T) {
				f := p.fake(t, 0, 1)
				m := start(t, []Config{{Name: "u", URL: f.http.URL, Refresh: time.Hour, Timeout: 200 * time.Millisecond, Health: 50 * time.Millisecond}}, nil)
				if st := m.Status()[0]; st.State != "connected" {
					t.Fatalf("state %q before, want connected", st.State)
				}
				tt.quiet(f, true)
				waitFor(t, "status failing", func() bool {
					st := m.Status()[0]
					return st.State == "failing" && st.Failures > 0 && st.LastError != ""
				})
				tt.quiet(f, false)
				waitFor(t, "status connected again", func() bool { return m.Status()[0].State == "connected" })
			})
		}
	}
}

// TestHealthPingKeepsTheSession: a health ping that is answered keeps
// the session, at either protocol. At 2026-07-28, where ping is no
// method and the go-sdk's client sent it without the _meta every
// request must carry, the upstream answered each ping 400, taken for a
// forgotten session: a reconnect and a listing every ping. With the
// _meta, it answered "method not found" and logged an error each time;
// the probe is server/discover there.
func TestHealthPingKeepsTheSession(t *testing.T) {
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			f := p.fake(t, 0, 1)
			var lists, connects, probes, bare atomic.Int32
			next := f.http.Config.Handler
			f.http.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				r.Body = io.NopCloser(bytes.NewReader(body))
				switch {
				case bytes.Contains(body, []byte(`"method":"ping"`)), bytes.Contains(body, []byte(`"method":"server/discover"`)):
					probes.Add(1)
					if f.stateless && !bytes.Contains(body, []byte(`"`+mcp.MetaKeyProtocolVersion+`"`)) {
						bare.Add(1)
					}
				case bytes.Contains(body, []byte(`"method":"tools/list"`)):
					lists.Add(1)
				case bytes.Contains(body, []byte(`"method":"initialize"`)):
					connects.Add(1)
				}
				next.ServeHTTP(w, r)
			})
			const health = 50 * time.Millisecond
			m := start(t, []Config{{Name: "u", URL: f.http.URL, Refresh: time.Hour, Health: health}}, nil)
			time.Sleep(20 * health)
			// Each new session is listed: one listing is one session.
			if n, c := lists.Load(), connects.Load(); n != 1 || c > 2 {
				t.Errorf("%d listings and %d initializes over 20 health pings; want the first listing alone, on one session", n, c)
			}
			if n := probes.Load(); n < 10 {
				t.Errorf("%d probes in 20 health intervals", n)
			}
			if n := bare.Load(); n > 0 {
				t.Errorf("%d probes without the _meta every 2026-07-28 request carries", n)
			}
			// At 2026-07-28 ping is no method: the go-sdk's server logs
			// each as an error ("method removed in the new protocol").
			if n := f.errors.n.Load(); n > 0 {
				t.Errorf("the upstream logged %d errors over 20 health pings, the last %q; want none", n, *f.errors.last.Load())
			}
			if st := m.Status()[0]; st.State != "connected" || st.Failures != 0 || st.LastError != "" {
				t.Errorf("status: %+v", st)
			}
		})
	}
}

// TestRestartIsNoFailure: an upstream that restarted between calls has
// forgotten the session; the health ping, or the listing that meets it
// first, finds it gone (a 404, or a 400 on a session that served:
// TestCallAfterUpstreamRestart), and the upstream is listed afresh
// without a failure in status or the breaker. A ping answered 400 was
// taken for life, and the session kept; a listing's 400 was a failure.
func TestRestartIsNoFailure(t *testing.T) {
	for _, by := range []struct {
		name            string
		refresh, health time.Duration
	}{{"health", time.Hour, 50 * time.Millisecond}, {"listing", 50 * time.Millisecond, time.Hour}} {
		for _, forget := range forgets {
			t.Run(by.name+"/"+forget.name, func(t *testing.T) {
				f := newFake(t, 0, 1)
				f.forget400.Store(forget.with400)
				m := start(t, []Config{{Name: "u", URL: f.http.URL, Refresh: by.refresh, Health: by.health}}, nil)
				before := m.Status()[0].LastSuccess
				f.restart()
				waitFor(t, "a listing after the restart", func() bool {
					st := m.Status()[0]
					return st.LastSuccess != nil && before != nil && st.LastSuccess.After(*before)
				})
				if st := m.Status()[0]; st.State != "connected" || st.LastError != "" || st.Failures != 0 {
					t.Errorf("status after a restart: %+v; want connected with no error counted", st)
				}
			})
		}
	}
}

// TestHealthTakesAnErrorForLife: an upstream that answers a ping with a
// JSON-RPC error (one without ping) is there.
func TestHealthTakesAnErrorForLife(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want bool
	}{
		{&jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "method not found"}, true},
		{fmt.Errorf("calling ping: %w", &jsonrpc.Error{Code: jsonrpc.CodeInternalError}), true},
		{fmt.Errorf("calling ping: %w", &jsonrpc.Error{Code: codeRejected, Message: "rejected by transport"}), false},
		{context.DeadlineExceeded, false},
		{errors.New("connection refused"), false},
	} {
		if got := answered(tt.err); got != tt.want {
			t.Errorf("answered(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

// An upstream that could never be called is refused at start-up, naming
// it, and without quoting its URL's credentials.
func TestNewRefusesBadConfig(t *testing.T) {
	ok := Config{Name: "u", URL: "http://127.0.0.1:1/mcp"}
	for _, tt := range []struct {
		cfgs []Config
		want string
	}{
		{[]Config{{URL: ok.URL}}, "name is required"},
		{[]Config{ok, ok}, `upstream "u": name repeated`},
		{[]Config{{Name: "u", URL: "127.0.0.1:1/mcp"}}, `upstream "u": url "127.0.0.1:1/mcp" must begin http:// or https://`},
		{[]Config{{Name: "u", URL: "http://tok_secret_9@/mcp"}}, `upstream "u": url "http:///mcp" names no host`},
		{[]Config{{Name: "u", URL: "http://h.example/mcp#x"}}, "must not have a #fragment"},
		{[]Config{{Name: "u", URL: ok.URL, BreakerFailures: -1}}, "breaker_failures must not be negative"},
		{[]Config{{Name: "u", URL: ok.URL, Health: -time.Second}}, "health_interval must not be negative"},
		// Each failed at every connection, the upstream failing for good.
		{[]Config{{Name: "u", URL: ok.URL, Headers: map[string]string{"Bad Name": "x"}}}, `upstream "u": headers: "Bad Name" is not a valid header name`},
		{[]Config{{Name: "u", URL: ok.URL, Headers: map[string]string{"Authorization": "Bearer secret_9\n"}}}, `upstream "u": headers: Authorization's value is not a valid header value`},
		{[]Config{{Name: "u", URL: ok.URL, Headers: map[string]string{"accept": "application/json"}}}, `upstream "u": headers: Accept is the MCP transport's own`},
		{[]Config{{Name: "u", URL: ok.URL, Headers: map[string]string{"MCP-Session-ID": "x"}}}, `headers: Mcp-Session-Id is the MCP transport's own`},
	} {
		_, err := New(tt.cfgs, Options{})
		if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "secret_9") {
			t.Errorf("New(%+v) = %v, want an error saying %q", tt.cfgs, err, tt.want)
		}
	}
}

// TestCallHops: a forwarded call says how many toolsearch services it
// has come through, one more than the request that asked for it, and
// which process sent it; one that has come through MaxHops is refused
// without reaching the upstream.
func TestCallHops(t *testing.T) {
	f := newFake(t, 0, 0)
	var calls atomic.Int32
	f.srv.AddTool(&mcp.Tool{Name: "hops", InputSchema: map[string]any{"type": "object"}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			calls.Add(1)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: req.Extra.Header.Get(HopsHeader) + " " + req.Extra.Header.Get(InstanceHeader)}}}, nil
		})
	m := startWith(t, []Config{{Name: "fake", URL: f.http.URL}}, Options{Instance: "me"})
	tests := []struct {
		hops int
		want string // the header the upstream saw; "" when refused
	}{
		{0, "1 me"},
		{3, "4 me"},
		{MaxHops - 1, fmt.Sprint(MaxHops, " me")},
		{MaxHops, ""},
	}
	for _, tt := range tests {
		before := calls.Load()
		res, err := m.Call(t.Context(), "fake", "hops", nil, CallOptions{Hops: tt.hops})
		switch {
		case tt.want == "" && (!errors.Is(err, ErrLoop) || calls.Load() != before):
			t.Errorf("hops %d: %v, %d calls made; want ErrLoop and none", tt.hops, err, calls.Load()-before)
		case tt.want != "" && (err != nil || res.Content[0].(*mcp.TextContent).Text != tt.want):
			t.Errorf("hops %d: %+v, %v; want the upstream to see %s", tt.hops, res, err, tt.want)
		}
	}
}

func TestHops(t *testing.T) {
	for v, want := range map[string]int{"": 0, "x": 0, "-1": 0, "3": 3, "8": MaxHops, "9": MaxHops, "99999999999999999999": MaxHops, " 2": 0} {
		if got := Hops(v); got != want {
			t.Errorf("Hops(%q) = %d, want %d", v, got, want)
		}
	}
}

// TestBudgetRaisedIsLogged: an answers' budget under one answer's bound
// is raised to it, and the raise is logged, since an operator sizing
// memory by the budget would otherwise not know of it.
func TestBudgetRaisedIsLogged(t *testing.T) {
	tests := []struct {
		name        string
		max, budget int64
		logged      bool
	}{
		{"both defaults", 0, 0, false},
		{"an answer's bound over the default budget", 64 << 20, 0, true},
		{"the budget written at the bound", 64 << 20, 64 << 20, false},
		{"an answer's bound under the default budget", 1 << 20, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs strings.Builder
			if _, err := New(nil, Options{MaxResultBytes: tt.max, ResultBudgetBytes: tt.budget, Logger: slog.New(slog.NewTextHandler(&logs, nil))}); err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(logs.String(), "raised to one answer's bound"); got != tt.logged {
				t.Errorf("logged %v, want %v: %q", got, tt.logged, logs.String())
			}
		})
	}
}

// TestCallAfterSessionStreamRefused: an upstream restarted, and its
// session stream, asked for again since toolsearch resumes streams, was
// refused (a 400 from a front like server-everything's): the SDK failed
// the session before the next call was sent. The SDK reports the call on
// it as a closed connection; it never left toolsearch, so it goes on a
// new session. (A call sent as the stream is refused meets the 400
// itself: TestCallAfterUpstreamRestart.)
func TestCallAfterSessionStreamRefused(t *testing.T) {
	f := newFake(t, 0, 1)
	f.forget400.Store(true)
	m := start(t, []Config{{Name: "u", URL: f.http.URL, Refresh: time.Hour, Health: time.Hour}}, nil)
	if _, err := m.Call(t.Context(), "u", "tool_0", nil, CallOptions{}); err != nil {
		t.Fatal(err)
	}
	u := m.byName["u"]
	u.mu.Lock()
	cs := u.session
	u.mu.Unlock()
	f.restart()
	f.http.CloseClientConnections() // the old process's connections end with it
	failed := make(chan struct{})
	go func() { cs.Wait(); close(failed) }()
	waitFor(t, "the SDK to fail the session", func() bool {
		select {
		case <-failed:
			return true
		default:
			return false
		}
	})
	res, err := m.Call(t.Context(), "u", "tool_0", nil, CallOptions{})
	if err != nil || res.IsError {
		t.Fatalf("the first call after the session failed: %v, %v", res, err)
	}
}

// TestReconnectSkipsDiscover: the SDK's client asks server/discover
// before initialize, two requests each connect to an upstream that speaks
// 2025-11-25 or older. Once an upstream has answered initialize, a
// reconnect (after its restart) asks initialize alone with the version it
// negotiated.
func TestReconnectSkipsDiscover(t *testing.T) {
	f := newFake(t, 0, 1)
	var discovers, lists atomic.Int64
	f.http.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			switch {
			case bytes.Contains(body, []byte(`"server/discover"`)):
				discovers.Add(1)
			case bytes.Contains(body, []byte(`"tools/list"`)):
				lists.Add(1)
			}
		}
		f.handler.Load().ServeHTTP(w, r)
	})
	m := start(t, []Config{{Name: "u", URL: f.http.URL, Refresh: time.Hour, Health: time.Hour}}, nil)
	for i := range 3 {
		f.restart()
		if res, err := m.Call(t.Context(), "u", "tool_0", nil, CallOptions{}); err != nil || res.IsError {
			t.Fatalf("a call after the restart: %v, %v", res, err)
		}
		// The call's new session asks for a listing; the next restart
		// waits for it, or it would meet the restart mid-connect, fail
		// and forget the version, as a connect that fails does.
		waitFor(t, "the listing the new session asked for", func() bool { return lists.Load() >= int64(2+i) })
	}
	if n := discovers.Load(); n != 1 {
		t.Errorf("server/discover asked %d times over 4 connects; want once, the first", n)
	}
}
