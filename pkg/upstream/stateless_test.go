package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// listenUpstream is a go-sdk upstream that can restart on its port, as
// a process does. At protocol 2026-07-28 (newListenUpstream) it has no
// sessions, sends list_changed only on the stream a client opens with
// subscriptions/listen, and its listening streams can be cut alone.
type listenUpstream struct {
	*fakeUpstream
	addr   string
	mu     sync.Mutex
	srv    *httptest.Server
	listen []*cuttable  // the open listening streams, to cut
	lists  atomic.Int32 // tools/list requests
	// onListen, when set, answers subscriptions/listen in place of the SDK.
	onListen func(w http.ResponseWriter, r *http.Request)
	// noStream answers a GET (2025-11-25's session stream) 405: the
	// upstream offers none, so nothing but a request notices a restart.
	noStream bool
}

func newListenUpstream(t *testing.T) *listenUpstream {
	t.Helper()
	return newRestartable(t, newStatelessFake(t, 0, 2))
}

// newRestartable serves f's handler on a port of its own, which restart
// closes and opens again.
func newRestartable(t *testing.T, fake *fakeUpstream) *listenUpstream {
	t.Helper()
	f := &listenUpstream{fakeUpstream: fake}
	f.fakeUpstream.http.Close() // its own server is not used
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f.addr = ln.Addr().String()
	f.serve(t, ln)
	t.Cleanup(func() { f.stop() })
	return f
}

func (f *listenUpstream) url() string { return "http://" + f.addr }

func (f *listenUpstream) serve(t *testing.T, ln net.Listener) {
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f.noStream && r.Method == http.MethodGet {
			http.Error(w, "no session stream here", http.StatusMethodNotAllowed)
			return
		}
		switch r.Header.Get("Mcp-Method") {
		case "tools/list":
			f.lists.Add(1)
		case "subscriptions/listen":
			if f.onListen != nil {
				f.onListen(w, r)
				return
			}
			c := &cuttable{ResponseWriter: w}
			f.mu.Lock()
			f.listen = append(f.listen, c)
			f.mu.Unlock()
			w = c
		}
		if f.forget400.Load() {
			w = &unknownSession400{ResponseWriter: w}
		}
		f.handler.Load().ServeHTTP(w, r)
	}))
	s.Listener.Close()
	s.Listener = ln
	s.Start()
	f.mu.Lock()
	f.srv = s
	f.mu.Unlock()
}

func (f *listenUpstream) stop() {
	f.mu.Lock()
	s := f.srv
	f.srv, f.listen = nil, nil
	f.mu.Unlock()
	if s != nil {
		// The port first, as a process that dies: a client connecting
		// again between the two (toolsearch does, at once, when its
		// listening stream ends) held Close for good.
		s.Listener.Close()
		s.CloseClientConnections()
		s.Close()
	}
}

// restart stops the upstream and starts it again on its port after down,
// as a deploy does, with a new tool and no sessions.
func (f *listenUpstream) restart(t *testing.T, down time.Duration, tool string) {
	f.stop()
	time.Sleep(down)
	f.add(tool, "A tool the new version brings.")
	f.fakeUpstream.restart()
	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		t.Fatal(err)
	}
	f.serve(t, ln)
}

// cutListening drops the connections of the open listening streams
// alone, as a proxy that ends idle streams does.
func (f *listenUpstream) cutListening(t *testing.T) {
	f.mu.Lock()
	ws := f.listen
	f.listen = nil
	f.mu.Unlock()
	if len(ws) == 0 {
		t.Fatal("no listening stream to cut")
	}
	for _, c := range ws {
		if err := c.cut(); err != nil {
			t.Fatal(err)
		}
	}
}

// cuttable is a stream whose connection can be dropped under the
// handler writing it, which is told so by its next write.
type cuttable struct {
	http.ResponseWriter
	mu   sync.Mutex
	done bool
}

func (c *cuttable) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done {
		return 0, http.ErrHijacked
	}
	return c.ResponseWriter.Write(p)
}

func (c *cuttable) Flush() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.done {
		http.NewResponseController(c.ResponseWriter).Flush()
	}
}

func (c *cuttable) cut() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	conn, _, err := http.NewResponseController(c.ResponseWriter).Hijack()
	if err != nil {
		return err
	}
	c.done = true
	return conn.Close()
}

// TestSessionLostIsListedAgain: a session that ends under toolsearch, by
// the upstream's or the network's doing, is made again and the tools
// listed at once. A deploy restarts the upstream with a new tool: at
// 2025-11-25 the SDK ends the session when its session stream cannot be
// resumed; at 2026-07-28 the listening stream ends, and the SDK neither
// opens it again nor says so, nor does it when a proxy cuts that stream
// alone. Left to the health ping (an hour here; 15 s by default) or the
// refresh, the new tool went unseen, the upstream shown connected.
func TestSessionLostIsListedAgain(t *testing.T) {
	restart := func(t *testing.T, f *listenUpstream) { f.restart(t, 300*time.Millisecond, "tool_new") }
	for _, tc := range []struct {
		name     string
		upstream func(*testing.T) *listenUpstream
		protocol string
		change   func(*testing.T, *listenUpstream)
	}{
		{"the upstream restarts with a new tool", func(t *testing.T) *listenUpstream { return newRestartable(t, newFake(t, 0, 2)) }, "2025-11-25", restart},
		// server-everything's express front answers the forgotten
		// session's resume 400, which the SDK reports as "Bad Request".
		{"the upstream restarts with a new tool, answering its forgotten session 400", func(t *testing.T) *listenUpstream {
			f := newFake(t, 0, 2)
			f.forget400.Store(true)
			return newRestartable(t, f)
		}, "2025-11-25", restart},
		{"the upstream restarts with a new tool", newListenUpstream, statelessProtocol, restart},
		{"the listening stream is cut, then a tool is added", newListenUpstream, statelessProtocol, func(t *testing.T, f *listenUpstream) {
			f.cutListening(t)
			waitFor(t, "the stream opened again", func() bool {
				f.mu.Lock()
				defer f.mu.Unlock()
				return len(f.listen) > 0
			})
			f.add("tool_new", "A tool added while toolsearch listens.")
		}},
	} {
		t.Run(tc.protocol+"/"+tc.name, func(t *testing.T) {
			f := tc.upstream(t)
			m := start(t, []Config{{Name: "u", URL: f.url(), Refresh: time.Hour, Health: time.Hour}}, nil)
			if got := names(m); !slices.Equal(got, []string{"u/tool_0", "u/tool_1"}) {
				t.Fatalf("tools before: %v", got)
			}
			u := m.byName["u"]
			u.mu.Lock()
			cs := u.session
			u.mu.Unlock()
			if r := cs.InitializeResult(); r == nil || r.ProtocolVersion != tc.protocol {
				t.Fatalf("the session negotiated %+v, want %s", r, tc.protocol)
			}
			tc.change(t, f)
			waitFor(t, "the new tool listed", func() bool { return slices.Contains(names(m), "u/tool_new") })
			if st := m.Status()[0]; st.State != "connected" || st.Failures != 0 || st.Breaker != Closed || st.LastError != "" {
				t.Errorf("status: %+v; want connected, nothing counted against the upstream", st)
			}
			if n := metric(t, m, "toolsearch_upstream_sessions_lost_total", map[string]string{"upstream": "u"}); n < 1 {
				t.Errorf("toolsearch_upstream_sessions_lost_total = %v, want at least 1", n)
			}
			res, err := m.Call(t.Context(), "u", "tool_new", json.RawMessage(`{"n":1}`), CallOptions{})
			if err != nil || res.IsError {
				t.Errorf("calling the new tool: %v %+v", err, res)
			}
		})
	}
}

// TestRefusedProbeWaitsForARestart: a health probe refused (nothing
// listens on the upstream's port: it is restarting, as in a deploy) is
// no failure when the upstream is back within redialWait; the listing
// waits for it, as after a session that ended. The probe counted a
// failure and the listing's refused connect a second, which opened the
// breaker: whether a deploy showed as an outage hung on which of the
// two noticed it first. The upstream here cannot listen, so the probe
// alone notices.
func TestRefusedProbeWaitsForARestart(t *testing.T) {
	f := newListenUpstream(t)
	f.onListen = func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "no listening here", http.StatusMethodNotAllowed)
	}
	m := start(t, []Config{{Name: "u", URL: f.url(), Refresh: time.Hour, Health: 50 * time.Millisecond}}, nil)
	f.restart(t, 500*time.Millisecond, "tool_new")
	waitFor(t, "the new tool listed", func() bool { return slices.Contains(names(m), "u/tool_new") })
	if st := m.Status()[0]; st.State != "connected" || st.Failures != 0 || st.Breaker != Closed || st.LastError != "" {
		t.Errorf("status: %+v; want connected, nothing counted against the upstream", st)
	}
}

// TestRefusedListingWaitsForARestart: a periodic listing refused by an
// upstream that answered a moment ago (it is restarting, as in a deploy)
// waits for it as a refused probe's listing does, at both protocols.
// Refused at once, it counted a failure, and the prober's next listing a
// second while the deploy went on, which opened the breaker: calls were
// refused past the upstream's return, and status showed an outage.
func TestRefusedListingWaitsForARestart(t *testing.T) {
	for _, tc := range []struct {
		protocol string
		upstream func(*testing.T) *listenUpstream
	}{
		{"2025-11-25", func(t *testing.T) *listenUpstream {
			f := newRestartable(t, newFake(t, 0, 2))
			f.noStream = true
			return f
		}},
		{statelessProtocol, func(t *testing.T) *listenUpstream {
			f := newListenUpstream(t)
			f.onListen = func(w http.ResponseWriter, _ *http.Request) {
				http.Error(w, "no listening here", http.StatusMethodNotAllowed)
			}
			return f
		}},
	} {
		t.Run(tc.protocol, func(t *testing.T) {
			f := tc.upstream(t)
			m := start(t, []Config{{Name: "u", URL: f.url(), Refresh: 100 * time.Millisecond, Health: time.Hour}}, nil)
			f.restart(t, 1200*time.Millisecond, "tool_new")
			waitFor(t, "the new tool listed", func() bool { return slices.Contains(names(m), "u/tool_new") })
			if st := m.Status()[0]; st.State != "connected" || st.Failures != 0 || st.Breaker != Closed || st.LastError != "" {
				t.Errorf("status: %+v; want connected, nothing counted against the upstream", st)
			}
			if n := metric(t, m, "toolsearch_upstream_lists_total", map[string]string{"upstream": "u", "result": "error"}); n > 0 {
				t.Errorf("%v failed listings, want none", n)
			}
		})
	}
}

// TestListenCutSparesCalls: the session whose listening stream was cut
// still answers the calls it carries; a new session takes the next.
func TestListenCutSparesCalls(t *testing.T) {
	f := newListenUpstream(t)
	started := make(chan struct{})
	f.handle("slow", func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		close(started)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Second):
		}
		return text("slow done"), nil
	})
	m := start(t, []Config{{Name: "u", URL: f.url(), Refresh: time.Hour, Health: time.Hour}}, nil)
	done := make(chan error, 1)
	go func() {
		res, err := m.Call(t.Context(), "u", "slow", nil, CallOptions{})
		if err == nil && (res.IsError || resultText(res) != "slow done") {
			err = fmt.Errorf("answer %+v", res)
		}
		done <- err
	}()
	<-started
	f.cutListening(t)
	if err := <-done; err != nil {
		t.Errorf("a call in flight as the listening stream was cut: %v", err)
	}
	if _, err := m.Call(t.Context(), "u", "tool_0", nil, CallOptions{}); err != nil {
		t.Errorf("the next call: %v", err)
	}
}

// TestListenEndsAgainAndAgain: an upstream that ends each listening
// stream as soon as it has acknowledged it has toolsearch list its tools
// at the pace list_changed's listings keep, not as fast as it can.
func TestListenEndsAgainAndAgain(t *testing.T) {
	f := newListenUpstream(t)
	var listens atomic.Int32
	f.onListen = func(w http.ResponseWriter, r *http.Request) {
		listens.Add(1)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.Write([]byte("event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/subscriptions/acknowledged\",\"params\":{\"notifications\":{\"toolsListChanged\":true}}}\n\n"))
	}
	m := start(t, []Config{{Name: "u", URL: f.url(), Refresh: time.Hour, Health: time.Hour}}, nil)
	const window = 3 * time.Second
	time.Sleep(window)
	// listBurst at once, then one a listGap, and the first listing.
	limit := int32(1 + listBurst + window/listGap + 1)
	if n := f.lists.Load(); n > limit || n < 2 {
		t.Errorf("%d listings in %s (%d listening streams); want 2 to %d", n, window, listens.Load(), limit)
	}
	if st := m.Status()[0]; st.State != "connected" || st.Failures != 0 {
		t.Errorf("status: %+v", st)
	}
}

// TestStateless400IsTheAnswer: at 2026-07-28 there is no session for the
// upstream to forget, so a 400 to a call (a proxy refusing its body) is
// that call's answer: it is sent once, not again on a new session as a
// 400 on a session that served is.
func TestStateless400IsTheAnswer(t *testing.T) {
	f := newStatelessFake(t, 0, 1)
	var calls atomic.Int32
	next := f.http.Config.Handler
	f.http.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Mcp-Method") == "tools/call" {
			calls.Add(1)
			http.Error(w, "request body refused", http.StatusBadRequest)
			return
		}
		next.ServeHTTP(w, r)
	})
	m := start(t, []Config{{Name: "u", URL: f.http.URL, Refresh: time.Hour, Health: time.Hour}}, nil)
	if _, err := m.Call(t.Context(), "u", "tool_0", nil, CallOptions{}); err == nil {
		t.Fatal("a call answered 400 succeeded")
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("the call was sent %d times, want once", n)
	}
	if st := m.Status()[0]; st.Breaker != Closed || st.Failures != 0 {
		t.Errorf("status: %+v; a refused call is no failure of the upstream", st)
	}
}

// TestListingsAreNotCached: an upstream at 2026-07-28 may tell clients to
// cache its tools/list pages (ttlMs). toolsearch's listings read the
// upstream all the same, so its schemas pass on exact and a listing that
// changed nothing is no change: from the go-sdk client's cache came
// schemas it had re-encoded, numbers rounded, and every other listing
// was a change.
func TestListingsAreNotCached(t *testing.T) {
	f := newStatelessFake(t, 0, 0)
	f.srv = mcp.NewServer(&mcp.Implementation{Name: "fake", Version: "1"}, &mcp.ServerOptions{
		SetCacheable: func(_ context.Context, _ mcp.Request, c *mcp.Cacheable) { c.TTLMs = int(time.Hour / time.Millisecond) }})
	schema := json.RawMessage(`{"type":"object","properties":{"zeta":{"type":"string"},"alpha":{"type":"integer","default":1234567890123456789}}}`)
	f.srv.AddTool(&mcp.Tool{Name: "exact", Description: "A tool whose schema holds a number no float64 holds.", InputSchema: schema},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return text("x"), nil })
	f.restart()
	var lists atomic.Int32
	next := f.http.Config.Handler
	f.http.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Mcp-Method") == "tools/list" {
			lists.Add(1)
		}
		next.ServeHTTP(w, r)
	})
	var changes atomic.Int32
	const refresh = 50 * time.Millisecond
	m := start(t, []Config{{Name: "u", URL: f.http.URL, Refresh: refresh, Health: time.Hour}}, func() { changes.Add(1) })
	time.Sleep(10 * refresh)
	if n, c := lists.Load(), changes.Load(); n < 5 || c != 1 {
		t.Errorf("%d listings read from the upstream and %d changes in 10 refreshes; want each read, and the first alone a change", n, c)
	}
	// The go-sdk's server orders the schema's keys: its numbers are the test.
	if got := string(m.Parts()[0].Servers[0].Tools[0].Schemas.AppendInput(nil)); !strings.Contains(got, "1234567890123456789") {
		t.Errorf("input schema %s; want its default as listed, 1234567890123456789", got)
	}
}

// TestUpgradeToStateless: an upstream first served with sessions at
// 2025-11-25, then, restarted as a new version, without sessions (and at
// 2026-07-28 too). toolsearch, which had pinned 2025-11-25 to reconnect
// with initialize alone, connects afresh asking server/discover, and so
// hears of new tools: pinned, it spoke 2025-11-25 to an upstream that
// has no session stream at that version, and a tool added after the
// upgrade went unseen until the next refresh.
func TestUpgradeToStateless(t *testing.T) {
	f := newFake(t, 0, 1)
	m := start(t, []Config{{Name: "u", URL: f.http.URL, Refresh: time.Hour, Health: 50 * time.Millisecond}}, nil)
	u := m.byName["u"]
	protocol := func() string {
		u.mu.Lock()
		defer u.mu.Unlock()
		if u.session == nil {
			return ""
		}
		return u.session.InitializeResult().ProtocolVersion
	}
	if p := protocol(); p != "2025-11-25" {
		t.Fatalf("first session at %q, want 2025-11-25", p)
	}
	// The new version starts: the old one's connections go with it.
	f.stateless = true
	f.restart()
	f.http.CloseClientConnections()
	waitFor(t, "a session at 2026-07-28", func() bool { return protocol() == statelessProtocol })
	f.add("tool_new", "A tool the new version adds while running.")
	waitFor(t, "the new tool listed", func() bool { return slices.Contains(names(m), "u/tool_new") })
}

// TestInputRequiredIsAnswered: at 2026-07-28 a tool asks its caller for
// input by answering "input required" (SEP-2322), and the client is to
// fulfil the requests and send the call again. toolsearch relays no
// elicitation or sampling and has no roots: the call is answered so, once,
// and counts against the upstream no more than any answer does. The SDK
// fulfilled a roots request (empty) and sent the call again, ten times
// for an upstream asking each time, then counted the give-up as a
// transport failure.
func TestInputRequiredIsAnswered(t *testing.T) {
	f := newStatelessFake(t, 0, 0)
	cases := []struct {
		tool string
		ask  mcp.InputRequestMap
		want string
	}{
		{"elicit", mcp.InputRequestMap{"name": &mcp.ElicitParams{Message: "Your name?", RequestedSchema: map[string]any{"type": "object"}}}, "for elicitation before"},
		//lint:ignore SA1019 what upstreams still ask for
		{"sample", mcp.InputRequestMap{"s": &mcp.CreateMessageParams{MaxTokens: 10, Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}}}}, "for sampling before"},
		//lint:ignore SA1019 what upstreams still ask for
		{"roots", mcp.InputRequestMap{"r": &mcp.ListRootsParams{}}, "for roots before"},
		//lint:ignore SA1019 what upstreams still ask for
		{"both", mcp.InputRequestMap{"r": &mcp.ListRootsParams{}, "e": &mcp.ElicitParams{Message: "Sure?", RequestedSchema: map[string]any{"type": "object"}}}, "for elicitation and roots before"},
		{"busy", mcp.InputRequestMap{}, "busy"},
	}
	for _, tc := range cases {
		f.handle(tc.tool, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{InputRequests: tc.ask}, nil
		})
	}
	var sent sync.Map // tool → *atomic.Int32
	next := f.http.Config.Handler
	f.http.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Mcp-Method") == "tools/call" {
			n, _ := sent.LoadOrStore(r.Header.Get("Mcp-Name"), new(atomic.Int32))
			n.(*atomic.Int32).Add(1)
		}
		next.ServeHTTP(w, r)
	})
	m := start(t, []Config{{Name: "u", URL: f.http.URL, Refresh: time.Hour, Health: time.Hour, BreakerFailures: 2}}, nil)
	for _, tc := range cases {
		_, err := m.Call(t.Context(), "u", tc.tool, nil, CallOptions{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want an error saying %q", tc.tool, err, tc.want)
		}
		if n, _ := sent.Load(tc.tool); n == nil || n.(*atomic.Int32).Load() != 1 {
			t.Errorf("%s: sent %v times, want once", tc.tool, n)
		}
	}
	if st := m.Status()[0]; st.Breaker != Closed || st.Failures != 0 || st.CallsFailing {
		t.Errorf("status: %+v; an answer is no failure of the upstream", st)
	}
}

// TestParamHeadersOnANewSession: at 2026-07-28 a tool may have an
// argument travel as a header too (x-mcp-header), which the upstream
// checks, and the SDK's client adds it only for the tools its session
// has listed. A call on a session made since the last listing (here,
// after a reconnect) is refused for the missing header: it is sent once
// more after a listing on the session, and runs once.
func TestParamHeadersOnANewSession(t *testing.T) {
	f := newStatelessFake(t, 0, 0)
	var ran atomic.Int32
	f.srv.AddTool(&mcp.Tool{Name: "regional", Description: "Answers for a region.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			ran.Add(1)
			return text("served " + string(req.Params.Arguments)), nil
		})
	m := start(t, []Config{{Name: "u", URL: f.http.URL, Refresh: time.Hour, Health: time.Hour}}, nil)
	call := func(when string) {
		t.Helper()
		ran.Store(0)
		res, err := m.Call(t.Context(), "u", "regional", json.RawMessage(`{"region":"eu"}`), CallOptions{})
		if err != nil || res.IsError || ran.Load() != 1 {
			t.Errorf("%s: %v %+v, ran %d times; want it answered, run once", when, err, res, ran.Load())
		}
	}
	call("on the listed session")
	u := m.byName["u"]
	u.mu.Lock()
	cs := u.session
	u.mu.Unlock()
	u.dropSession(cs)
	call("on a session made for the call")
}
