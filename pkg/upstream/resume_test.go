package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// streamUpstream is an upstream on the go-sdk whose call streams end
// before their answers: it closes one itself (SEP-1699), or the network
// drops it. With an event store it keeps its streams' events, as
// server-everything does, so a client can resume one; it speaks
// 2025-11-25, the last protocol with resumable streams.
type streamUpstream struct {
	srv     *mcp.Server
	store   bool
	handler atomic.Pointer[mcp.StreamableHTTPHandler]
	http    *httptest.Server
	calls   atomic.Int64 // how many times the tool ran
	cut     atomic.Bool  // drop the next call's connection after its first event
	// gateway is how many resumes (GETs with Last-Event-ID) to answer 502
	// before the upstream's own answer, as a proxy does while the
	// upstream behind it is away for a moment.
	gateway atomic.Int64
	// onCut runs once the connection is dropped (restart: the upstream
	// forgets its sessions, as a restarted process does).
	onCut func()
}

// exactN is the work tool's structured content: a number no float64
// holds, relayed exact from a resumed stream as from any other.
const exactN = `{"n":9007199254740993}`

func newStreamUpstream(tb testing.TB, store, hangUp bool) *streamUpstream {
	tb.Helper()
	f := &streamUpstream{store: store,
		srv: mcp.NewServer(&mcp.Implementation{Name: "streams", Version: "1"}, &mcp.ServerOptions{SupportedProtocolVersions: []string{"2025-11-25"}})}
	f.srv.AddTool(&mcp.Tool{Name: "work", Description: "Work a while, then answer.", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			f.calls.Add(1)
			if hangUp && req.Extra != nil && req.Extra.CloseSSEStream != nil {
				req.Extra.CloseSSEStream(mcp.CloseSSEStreamArgs{RetryAfter: 20 * time.Millisecond})
			}
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(300 * time.Millisecond):
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "worked"}}, StructuredContent: json.RawMessage(exactN)}, nil
		})
	f.restart()
	f.http = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Last-Event-ID") != "" && f.gateway.Add(-1) >= 0 {
			http.Error(w, "<html>502 Bad Gateway</html>", http.StatusBadGateway)
			return
		}
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			if bytes.Contains(body, []byte(`"tools/call"`)) && f.cut.Swap(false) {
				w = &cutWriter{ResponseWriter: w, then: f.onCut, atHeader: !f.store}
			}
		}
		f.handler.Load().ServeHTTP(w, r)
	}))
	tb.Cleanup(f.http.Close)
	return f
}

func (f *streamUpstream) restart() {
	var opts mcp.StreamableHTTPOptions
	if f.store {
		opts.EventStore = mcp.NewMemoryEventStore(nil)
	}
	f.handler.Store(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return f.srv }, &opts))
}

// cutWriter drops its connection once the first event is flushed (the
// client has the stream's first event id, with a store, and no answer),
// or, atHeader, once the stream's header is (a stream without ids, whose
// first event would be the answer).
type cutWriter struct {
	http.ResponseWriter
	then     func()
	atHeader bool
	done     bool
}

func (c *cutWriter) WriteHeader(code int) {
	c.ResponseWriter.WriteHeader(code)
	if c.atHeader && !c.done {
		c.Flush()
	}
}

func (c *cutWriter) Write(p []byte) (int, error) {
	if c.atHeader && !c.done {
		c.WriteHeader(http.StatusOK) // the header alone, then the cut
	}
	if c.done {
		return 0, http.ErrHijacked
	}
	return c.ResponseWriter.Write(p)
}

func (c *cutWriter) Flush() {
	if c.done {
		return
	}
	http.NewResponseController(c.ResponseWriter).Flush()
	conn, _, err := http.NewResponseController(c.ResponseWriter).Hijack()
	if err != nil {
		return
	}
	c.done = true
	conn.Close()
	if c.then != nil {
		c.then()
	}
}

func (c *cutWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// TestCallStreamEndsEarly: a call's answer stream that ends before its
// answer. An upstream that keeps its events is resumed with
// Last-Event-ID, whether it closed the stream itself (SEP-1699: servers
// may, to free a connection during a long call) or the network dropped
// it, and the answer is read once the tool finishes, its numbers exact. A stream that cannot
// be resumed (no store, or an upstream that restarted and forgot the
// session) fails the call at once, saying so, and the call is never sent
// again: it ran upstream.
func TestCallStreamEndsEarly(t *testing.T) {
	for _, tt := range []struct {
		name          string
		store, hangUp bool
		cut, restart  bool
		gateway       int64  // resumes a proxy answers 502
		want          string // the result's text, or "" for an error
		wantErr       string
	}{
		{name: "upstream closes its stream", store: true, hangUp: true, want: "worked"},
		{name: "connection dropped", store: true, cut: true, want: "worked"},
		// The SDK ended the session over the 502, and the call with it.
		{name: "connection dropped, a proxy's 502 for a moment", store: true, cut: true, gateway: 1, want: "worked"},
		{name: "connection dropped, a proxy's 502 for longer", store: true, cut: true, gateway: resumeRetries, wantErr: "may have run"},
		{name: "connection dropped, upstream restarted", store: true, cut: true, restart: true, wantErr: "may have run"},
		{name: "connection dropped, no event store", cut: true, wantErr: "may have run"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newStreamUpstream(t, tt.store, tt.hangUp)
			if tt.restart {
				f.onCut = f.restart
			}
			m := start(t, []Config{{Name: "u", URL: f.http.URL, Timeout: 20 * time.Second}}, nil)
			f.cut.Store(tt.cut)
			f.gateway.Store(tt.gateway)
			res, err := m.Call(t.Context(), "u", "work", nil, CallOptions{})
			switch {
			case tt.want != "":
				if err != nil || res.IsError || resultText(res) != tt.want {
					t.Fatalf("Call = %v, %v; want %q", res, err, tt.want)
				}
				if got, _ := json.Marshal(res.StructuredContent); string(got) != exactN {
					t.Errorf("structuredContent %s; want %s as the upstream wrote it", got, exactN)
				}
			case err == nil:
				t.Fatalf("Call = %v; want an error saying %q", resultText(res), tt.wantErr)
			case !strings.Contains(err.Error(), tt.wantErr) || errors.Is(err, ErrTimeout):
				t.Fatalf("Call error = %v; want one saying %q", err, tt.wantErr)
			}
			if n := f.calls.Load(); n != 1 {
				t.Errorf("the tool ran %d times; a call is sent once", n)
			}
			if n := metric(t, m, "toolsearch_upstream_resumes_total", map[string]string{"upstream": "u", "stream": "call"}); (n > 0) != tt.store {
				t.Errorf("toolsearch_upstream_resumes_total{stream=call} = %v; want some exactly when the upstream keeps events", n)
			}
		})
	}
}

func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

// TestResumesArePaced: an upstream that closes its call's stream again
// and again, asking to be called back at once (retry 1 ms) with a new
// event each time so that the client sees progress, would have
// toolsearch send GETs as fast as the loop turns, for as long as the
// call may last. A call's resumes are paced: a few at once, then one a
// second.
func TestResumesArePaced(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "hangs-up", Version: "1"}, &mcp.ServerOptions{SupportedProtocolVersions: []string{"2025-11-25"}})
	// The tool churns until it is cancelled or the test ends. The SDK's
	// client sends the cancellation after the call has returned, and the
	// manager, stopped at once, may close the session first: the
	// upstream's handler then ran on, and its server's Close, waiting for
	// it, never returned.
	over := make(chan struct{})
	srv.AddTool(&mcp.Tool{Name: "churn", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			for i := 0; ctx.Err() == nil && !closed(over); i++ {
				req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Progress: float64(i)})
				req.Extra.CloseSSEStream(mcp.CloseSSEStreamArgs{RetryAfter: time.Millisecond})
				time.Sleep(time.Millisecond)
			}
			return nil, ctx.Err()
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{EventStore: mcp.NewMemoryEventStore(nil)})
	var gets atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.Header.Get("Last-Event-ID") != "" {
			gets.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(up.Close)
	const timeout = 3 * time.Second
	m := start(t, []Config{{Name: "u", URL: up.URL, Timeout: timeout}}, nil)
	t.Cleanup(func() { close(over) }) // before the manager stops
	_, err := m.Call(t.Context(), "u", "churn", nil, CallOptions{Progress: func(context.Context, *mcp.ProgressNotificationParams) {}})
	if err == nil {
		t.Fatal("a call that never answers succeeded")
	}
	// A burst, then one a second for the rest of the call.
	if n, most := gets.Load(), int64(resumeBurst+timeout/time.Second+2); n > most {
		t.Errorf("%d resumes in a call of at most %s; paced, at most %d", n, timeout, most)
	} else {
		t.Logf("%d resumes in a call of at most %s", n, timeout)
	}
}

// unknownSession400 answers 400 where the SDK's handler answers 404 for
// a session it does not know.
type unknownSession400 struct {
	http.ResponseWriter
	swallow bool
}

func (w *unknownSession400) WriteHeader(code int) {
	if code != http.StatusNotFound {
		w.ResponseWriter.WriteHeader(code)
		return
	}
	w.swallow = true
	w.Header().Set("Content-Type", "application/json")
	w.ResponseWriter.WriteHeader(http.StatusBadRequest)
	io.WriteString(w.ResponseWriter, `{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: No valid session ID provided"},"id":null}`)
}

func (w *unknownSession400) Write(p []byte) (int, error) {
	if w.swallow {
		return len(p), nil
	}
	return w.ResponseWriter.Write(p)
}

func (w *unknownSession400) Flush() { http.NewResponseController(w.ResponseWriter).Flush() }

// TestSessionStreamReopensArePaced: an upstream that ends its session
// stream again and again, each time with a new event id and a retry of
// 1 ms, had toolsearch open it again as fast as the loop turned, for the
// session's life. The session stream's resumes are paced, as a call's
// are.
func TestSessionStreamReopensArePaced(t *testing.T) {
	f := newFake(t, 0, 1)
	var gets, n atomic.Int64
	f.http.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			f.handler.Load().ServeHTTP(w, r)
			return
		}
		gets.Add(1)
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "id: e%d\nretry: 1\ndata: \n\n", n.Add(1))
	})
	m := start(t, []Config{{Name: "u", URL: f.http.URL, Refresh: time.Hour, Health: time.Hour}}, nil)
	time.Sleep(2 * time.Second)
	// The session's first GET is not paced; its resumes are.
	if got, most := gets.Load(), int64(1+streamReopenBurst+2*time.Second/streamReopenEvery+1); got > most {
		t.Errorf("the session stream opened %d times in 2 s; paced, at most %d", got, most)
	} else {
		t.Logf("the session stream opened %d times in 2 s", got)
	}
	if n := metric(t, m, "toolsearch_upstream_resumes_total", map[string]string{"upstream": "u", "stream": "session"}); n < 1 {
		t.Errorf("toolsearch_upstream_resumes_total{stream=session} = %v; want the resumes counted", n)
	}
}

// closed reports whether c is closed, without waiting.
func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// TestSessionStreamBlip: a session stream that a proxy ends, and answers
// 502 when it is asked for again (the upstream behind it away for a
// moment), is asked again after the SDK's wait, and the session goes
// on, whether its events had ids (a resume) or not (opened again). The
// SDK ended the session over the 502, and with it the call in flight.
func TestSessionStreamBlip(t *testing.T) {
	for _, first := range []string{"id: e1\nretry: 1\ndata: \n\n", "retry: 1\ndata: \n\n"} {
		t.Run(fmt.Sprintf("ids %v", strings.Contains(first, "id:")), func(t *testing.T) {
			f := newFake(t, 0, 1)
			held := holdSlow(t, f)
			var gets atomic.Int64
			f.http.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method != http.MethodGet {
					f.handler.Load().ServeHTTP(w, r)
					return
				}
				switch gets.Add(1) {
				case 1: // ended by the proxy once the call is in flight
					w.Header().Set("Content-Type", "text/event-stream")
					fmt.Fprint(w, first)
					http.NewResponseController(w).Flush()
					select {
					case <-held.started:
					case <-r.Context().Done():
					}
				case 2:
					http.Error(w, "<html>502 Bad Gateway</html>", http.StatusBadGateway)
				default:
					w.Header().Set("Content-Type", "text/event-stream")
					http.NewResponseController(w).Flush()
					<-r.Context().Done()
				}
			})
			m := start(t, []Config{{Name: "u", URL: f.http.URL, Refresh: time.Hour, Health: time.Hour}}, nil)
			before := m.ups[0].current()
			held.call(t, m)
			waitFor(t, "the session stream asked for again after the 502", func() bool { return gets.Load() >= 3 })
			held.release()
			if err := <-held.err; err != nil {
				t.Errorf("the call in flight: %v", err)
			}
			if after := m.ups[0].current(); after != before {
				t.Error("the session was replaced; want it kept")
			}
		})
	}
}

// TestSessionStreamUnopened: a session whose stream (its GET, or at
// 2026-07-28 its subscriptions/listen) a proxy answered with a 502 page
// as it opened went on without one, the SDK saying nothing, and the
// upstream's list_changed went unheard until the refresh. Such a
// session is made again, once an episode: one whose stream never opens
// is not made again and again.
func TestSessionStreamUnopened(t *testing.T) {
	for _, p := range protocols {
		for _, tt := range []struct {
			name   string
			refuse int64 // stream requests answered 502
		}{
			{"for a moment", 1},
			{"always", 1 << 40},
		} {
			t.Run(p.name+"/"+tt.name, func(t *testing.T) {
				f := p.fake(t, 0, 1)
				var streams atomic.Int64 // one a session: the SDK does not ask again for a first one
				serve := f.http.Config.Handler
				f.http.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					stream := r.Method == http.MethodGet || r.Header.Get("Mcp-Method") == "subscriptions/listen"
					if stream && streams.Add(1) <= tt.refuse {
						http.Error(w, "<html>502 Bad Gateway</html>", http.StatusBadGateway)
						return
					}
					serve.ServeHTTP(w, r)
				})
				m := start(t, []Config{{Name: "u", URL: f.http.URL, Refresh: time.Hour, Health: time.Hour}}, nil)
				if tt.refuse == 1 {
					waitFor(t, "the session's stream open", func() bool { return streams.Load() >= 2 })
					f.add("brand_new", "A tool added at runtime.")
					waitFor(t, "the added tool, announced", func() bool { return slices.Contains(names(m), "u/brand_new") })
					return
				}
				time.Sleep(3 * time.Second)
				if n := streams.Load(); n != 2 {
					t.Errorf("%d sessions made in 3 s against an upstream whose stream never opens; want 2, one made again", n)
				}
			})
		}
	}
}
