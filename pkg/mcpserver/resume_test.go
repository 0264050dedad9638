package mcpserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolsearch/toolsearch/pkg/access"
)

// cutOnce is a client's transport whose first event stream answering a
// POST breaks after its first event, as a connection that drops does.
type cutOnce struct {
	token string
	done  atomic.Bool
	cut   chan struct{} // closed once the stream broke
}

func (c *cutOnce) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := bearer{c.token}.RoundTrip(r)
	if err != nil || r.Method != http.MethodPost || resp.Header.Get("Content-Type") != "text/event-stream" || c.done.Swap(true) {
		return resp, err
	}
	resp.Body = &cutBody{ReadCloser: resp.Body, cut: c.cut}
	return resp, nil
}

// cutBody passes on its first event, then fails, closing the connection.
type cutBody struct {
	io.ReadCloser
	cut  chan struct{}
	seen bytes.Buffer
	gone bool
}

func (b *cutBody) Read(p []byte) (int, error) {
	if b.gone {
		return 0, io.ErrUnexpectedEOF
	}
	n, err := b.ReadCloser.Read(p)
	if end := bytes.Index(append(b.seen.Bytes(), p[:n]...), []byte("\n\n")); end >= 0 {
		n = end + 2 - b.seen.Len()
		b.gone = true
		b.ReadCloser.Close()
		close(b.cut)
		return n, nil
	}
	b.seen.Write(p[:n])
	return n, err
}

// TestCallResumesAfterBreak: a client whose connection breaks while a
// relayed call runs reconnects with Last-Event-ID and reads the call's
// result, which came while it was away. Without an event store the SDK's
// client never had it: the call waited out its caller's deadline.
func TestCallResumesAfterBreak(t *testing.T) {
	release := make(chan struct{})
	slow := func(s *mcp.Server) {
		s.AddTool(&mcp.Tool{Name: "long_report", Description: "Compile a long weather report.", InputSchema: map[string]any{"type": "object"},
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
			func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				select {
				case <-release:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "the report"}}}, nil
			})
	}
	reg := prometheus.NewRegistry()
	r := newRigWith(t, []access.Key{{Name: "people", Hash: access.HashSecret("k")}}, Options{Registerer: reg}, slow)
	tr := &cutOnce{token: "k", cut: make(chan struct{})}
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: r.url, HTTPClient: &http.Client{Transport: tr}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	go func() {
		<-tr.cut
		close(release) // the result comes while the client is away
	}()
	// A bound, so that a client left waiting fails the test, not the run.
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{"name": "long_report"}})
	if err != nil || res.IsError || text(res) != "the report" {
		t.Fatalf("call_tool after the break: %v %q", err, text(res))
	}
	select {
	case <-tr.cut:
	default:
		t.Fatal("the stream never broke: nothing was resumed")
	}
	if n := series(reg, "toolsearch_mcp_resumes_total", map[string]string{"outcome": "replayed"}); n != 1 {
		t.Errorf("toolsearch_mcp_resumes_total{outcome=\"replayed\"} %v, want 1", n)
	}
	// The session's end lets go of what the store kept for it.
	cs.Close()
	waitFor(t, "the closed session's events let go", func() bool {
		r.mcp.resume.mu.Lock()
		defer r.mcp.resume.mu.Unlock()
		return len(r.mcp.resume.sessions) == 0 && r.mcp.resume.bytes == 0
	})
}

// TestResumeStore: what the store keeps, gives back and lets go.
func TestResumeStore(t *testing.T) {
	ctx, call := context.Background(), resumable(context.Background())
	ev := func(n int) []byte { return bytes.Repeat([]byte("x"), n) }
	read := func(s *resumeStore, session, stream string, index int) (int, error) {
		n := 0
		for d, err := range s.After(ctx, session, stream, index) {
			if err != nil {
				return n, err
			}
			n += len(d)
		}
		return n, nil
	}
	t.Run("a stream answered as JSON is not kept", func(t *testing.T) {
		s := newResumeStore(nil)
		s.Open(ctx, "a", "json")
		s.Append(ctx, "a", "json", ev(10))
		if _, err := read(s, "a", "json", -1); !errors.Is(err, errNotKept) || s.bytes != 0 {
			t.Errorf("after: %v, %d bytes held", err, s.bytes)
		}
	})
	t.Run("a streamed call and the GET stream are kept, and replayed after an index", func(t *testing.T) {
		s := newResumeStore(nil)
		for _, id := range []string{"", "call"} {
			s.Open(call, "a", id)
			s.Append(ctx, "a", id, nil) // a priming event
			s.Append(ctx, "a", id, ev(3))
			s.Append(ctx, "a", id, ev(5))
			for _, tt := range []struct{ index, want int }{{-1, 8}, {0, 8}, {1, 5}, {2, 0}, {9, 0}} {
				if n, err := read(s, "a", id, tt.index); err != nil || n != tt.want {
					t.Errorf("stream %q after %d: %d bytes, %v; want %d", id, tt.index, n, err, tt.want)
				}
			}
		}
		if _, err := read(s, "b", "call", -1); !errors.Is(err, errNotKept) {
			t.Errorf("another session's stream: %v", err)
		}
	})
	t.Run("past the bytes, the oldest stream's events go first", func(t *testing.T) {
		s := newResumeStore(nil)
		big := resumeBytes / 4
		for i := range 5 {
			id := fmt.Sprint("call", i)
			s.Open(call, fmt.Sprint("session", i%2), id)
			s.Append(ctx, fmt.Sprint("session", i%2), id, ev(big))
		}
		if s.bytes > resumeBytes {
			t.Errorf("%d bytes held, over %d", s.bytes, resumeBytes)
		}
		if _, err := read(s, "session0", "call0", -1); !errors.Is(err, mcp.ErrEventsPurged) {
			t.Errorf("the oldest stream: %v, want its events let go", err)
		}
		if n, err := read(s, "session0", "call4", -1); err != nil || n != big {
			t.Errorf("the newest stream: %d bytes, %v", n, err)
		}
	})
	t.Run("a session keeps its latest calls", func(t *testing.T) {
		s := newResumeStore(nil)
		s.Open(call, "a", "")
		for i := range resumeStreamsSession + 3 {
			s.Open(call, "a", fmt.Sprint(i))
			s.Append(ctx, "a", fmt.Sprint(i), ev(1))
		}
		if got := len(s.sessions["a"]); got != resumeStreamsSession+1 {
			t.Errorf("%d streams kept, want %d and the GET stream", got, resumeStreamsSession)
		}
		if _, err := read(s, "a", "0", -1); !errors.Is(err, errNotKept) {
			t.Errorf("the oldest call: %v", err)
		}
		if _, err := read(s, "a", "", -1); err != nil {
			t.Errorf("the GET stream was let go: %v", err)
		}
		if s.bytes != resumeStreamsSession {
			t.Errorf("%d bytes held, want %d", s.bytes, resumeStreamsSession)
		}
	})
	t.Run("an event too large is not kept, nor its stream", func(t *testing.T) {
		s := newResumeStore(nil)
		s.Open(call, "a", "call")
		s.Append(ctx, "a", "call", ev(1))
		s.Append(ctx, "a", "call", ev(resumeEventMax+1))
		if _, err := read(s, "a", "call", -1); !errors.Is(err, errNotKept) || s.bytes != 0 {
			t.Errorf("after: %v, %d bytes held", err, s.bytes)
		}
	})
	t.Run("an error response is kept tamed, as the POST's stream writes it", func(t *testing.T) {
		s := newResumeStore(nil)
		s.Open(call, "a", "call")
		long := strings.Repeat("z", 4<<10)
		s.Append(ctx, "a", "call", []byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"bad `+long+`"}}`))
		for d, err := range s.After(ctx, "a", "call", -1) {
			if err != nil || bytes.Contains(d, []byte(long)) || !bytes.Contains(d, []byte(`"id":1`)) {
				t.Errorf("replayed %d bytes, %v: %.120s", len(d), err, d)
			}
		}
	})
	t.Run("a closed session's events go", func(t *testing.T) {
		s := newResumeStore(nil)
		s.Open(call, "a", "call")
		s.Append(ctx, "a", "call", ev(7))
		s.SessionClosed(ctx, "a")
		if _, err := read(s, "a", "call", -1); !errors.Is(err, errNotKept) || s.bytes != 0 || len(s.sessions) != 0 {
			t.Errorf("after: %v, %d bytes held, %d sessions", err, s.bytes, len(s.sessions))
		}
	})
}

// TestResumeStoreConcurrent: sessions opening, appending, reading and
// closing at once hold no more than the bound, and leave nothing behind.
func TestResumeStoreConcurrent(t *testing.T) {
	s := newResumeStore(nil)
	call := resumable(context.Background())
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			session := fmt.Sprint("s", g)
			for i := range 200 {
				id := fmt.Sprint(i)
				s.Open(call, session, id)
				s.Append(call, session, id, bytes.Repeat([]byte("y"), 64<<10))
				for range s.After(call, session, id, -1) {
				}
			}
			s.SessionClosed(call, session)
		})
	}
	wg.Wait()
	if s.bytes != 0 || len(s.sessions) != 0 {
		t.Errorf("%d bytes and %d sessions left", s.bytes, len(s.sessions))
	}
}

// TestSessionGauges: the sessions a pod holds, and those listening, as
// its metrics say them.
func TestSessionGauges(t *testing.T) {
	reg := prometheus.NewRegistry()
	r := newRigWith(t, nil, Options{Registerer: reg}, nil)
	held := func() (float64, float64) {
		return series(reg, "toolsearch_mcp_sessions", map[string]string{}), series(reg, "toolsearch_mcp_sessions_listening", map[string]string{})
	}
	a, b := r.connect(t, ""), r.connect(t, "")
	waitFor(t, "two sessions, both listening", func() bool { n, l := held(); return n == 2 && l == 2 })
	a.Close()
	waitFor(t, "one session", func() bool { n, l := held(); return n == 1 && l == 1 })
	b.Close()
	waitFor(t, "none", func() bool { n, l := held(); return n == 0 && l == 0 })
}
