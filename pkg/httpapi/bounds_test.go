package httpapi

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"golang.org/x/net/netutil"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolsearch/toolsearch/pkg/embedding"
	"github.com/toolsearch/toolsearch/pkg/search"
)

// TestHostileRequestsAreBounded sends what an unauthenticated caller
// controls (methods, paths, X-Request-Id) at sizes and in numbers meant to
// grow the metrics, the log and the answers, and checks each stays bounded.
func TestHostileRequestsAreBounded(t *testing.T) {
	reg := prometheus.NewRegistry()
	var logs bytes.Buffer
	svc := search.New(search.Config{Embedder: embedding.NewLocal(64), Registerer: reg})
	if _, err := svc.Build(t.Context(), testSetup(t, false)); err != nil {
		t.Fatal(err)
	}
	h := withMetrics(NewServer(svc, Options{Registerer: reg, Logger: slog.New(slog.NewJSONHandler(&logs, nil))}), reg)
	huge := strings.Repeat("X", 500<<10)
	type req struct {
		method, path, reqID string
	}
	var reqs []req
	for i := range 2000 {
		reqs = append(reqs, req{method: fmt.Sprintf("M%d", i), path: "/mcp/tool-search"})
	}
	reqs = append(reqs,
		req{method: huge, path: "/mcp/tool-search"},
		req{method: huge, path: "/nope"},
		req{method: http.MethodGet, path: "/" + huge},
		req{method: http.MethodGet, path: "/mcp/tool-search/status", reqID: huge},
		req{method: http.MethodGet, path: "/nope", reqID: "id\nwith\x00control"},
	)
	for _, rq := range reqs {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Method, r.URL.Path, r.RequestURI = rq.method, rq.path, rq.path
		if rq.reqID != "" {
			r.Header.Set("X-Request-Id", rq.reqID)
		}
		rec := httptest.NewRecorder()
		logs.Reset()
		h.ServeHTTP(rec, r)
		// The status page itself is about 1 KiB; what matters is that no
		// input makes any answer grow.
		if n := rec.Body.Len(); n > 2048 {
			t.Errorf("%.20s %.20s: answer is %d bytes, want at most 2 KiB", rq.method, rq.path, n)
		}
		if n := logs.Len(); n > 2048 {
			t.Errorf("%.20s %.20s: logged %d bytes, want at most 2 KiB", rq.method, rq.path, n)
		}
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if n := len(mf.GetMetric()); n > 40 {
			t.Errorf("%s has %d series after hostile requests, want a small fixed set", mf.GetName(), n)
		}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if n := rec.Body.Len(); n > 64<<10 {
		t.Errorf("/metrics is %d bytes after hostile requests, want under 64 KiB", n)
	}
	if !strings.Contains(rec.Body.String(), `method="other"`) {
		t.Errorf("/metrics has no method=\"other\" series:\n%.2000s", rec.Body.String())
	}
}

func TestRequestID(t *testing.T) {
	tests := []struct {
		name, in string
		kept     bool
	}{
		{"a proxy's id", "req-123_abc.def:9/x", true},
		{"empty", "", false},
		{"too long", strings.Repeat("a", maxRequestID+1), false},
		{"control characters", "a\nb", false},
		{"quotes", `a"b`, false},
		{"given twice", "req-1\nreq-1", false}, // two fields: neither is the request's
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, _ := newTestServer(t, true)
			r := httptest.NewRequest(http.MethodGet, "/nope", nil)
			if tt.in != "" {
				r.Header.Set("X-Request-Id", tt.in)
			}
			if first, second, twice := strings.Cut(tt.in, "\n"); twice && first == second {
				r.Header["X-Request-Id"] = []string{first, second}
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			got := decodeError(t, rec).Error.RequestID
			if first, _, _ := strings.Cut(tt.in, "\n"); (got == first) != tt.kept || got == "" || len(got) > maxRequestID {
				t.Errorf("X-Request-Id %q: request_id %q, kept=%v want kept=%v", tt.in, got, got == tt.in, tt.kept)
			}
		})
	}
}

func decodeError(tb testing.TB, rec *httptest.ResponseRecorder) errorResponse {
	tb.Helper()
	var e errorResponse
	if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil {
		tb.Fatalf("error body %q: %v", rec.Body.String(), err)
	}
	return e
}

// TestReclaimIdle: keep-alive connections that hold the connection bound
// while idle are closed, so that a new client is served instead of
// queued for the idle timeout; below three quarters of the bound,
// keep-alives are back.
func TestReclaimIdle(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	srv.Listener = netutil.LimitListener(srv.Listener, 2)
	srv.Config.IdleTimeout = time.Hour
	idle := make(chan struct{}, 8)
	srv.Config.ConnState = ReclaimIdle(srv.Config, 2, func(_ net.Conn, state http.ConnState) {
		if state == http.StateIdle {
			idle <- struct{}{}
		}
	})
	srv.Start()
	defer srv.Close()
	// Deadlines guard against a hang, they measure nothing: without
	// reclaiming, the idle connections would stay for the hour.
	var held []*bufio.Reader
	for i := range 2 { // two clients that made one request each and keep their connections
		if i == 1 {
			// The server marks the first idle after the client has read
			// its answer; only a connection marked idle is closed when the
			// bound is reached (one that is not yet closes after its
			// answer, unless the second has already left and keep-alives
			// are back on), so the second waits for the mark.
			<-idle
		}
		c, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(30 * time.Second))
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		held = append(held, br)
	}
	// The first sat idle when the second reached the bound. The second's
	// fate depends on when the first's close let keep-alives back on.
	if _, err := held[0].ReadByte(); err != io.EOF {
		t.Fatalf("the connection idle when the bound was reached: read %v, want it closed (EOF)", err)
	}
	client := &http.Client{Timeout: 30 * time.Second}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		resp, err := client.Get(srv.URL)
		if err != nil {
			t.Fatalf("a new client after the idle connections: %v", err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if !resp.Close {
			break // keep-alives are back
		}
		if time.Now().After(deadline) {
			t.Fatal("keep-alives stayed off under the bound")
		}
	}
}

// TestRefusedRequestLinesAreBudgeted: a flood of refused requests logs a
// burst of lines, then a count of those it left out, while answers and
// internal errors are each logged.
func TestRefusedRequestLinesAreBudgeted(t *testing.T) {
	var logs bytes.Buffer
	m := newMetrics(prometheus.NewRegistry(), slog.New(slog.NewJSONHandler(&logs, nil)))
	clock := time.Unix(1e9, 0)
	m.now = func() time.Time { return clock }
	h := m.instrument(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		code, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/"))
		w.WriteHeader(code)
	}))
	send := func(code, n int) {
		for range n {
			h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/"+strconv.Itoa(code), nil))
		}
	}
	count := func() (lines map[string]int, summarised string) {
		lines = map[string]int{}
		for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
			var rec map[string]any
			if err := json.Unmarshal([]byte(l), &rec); err != nil {
				t.Fatalf("a log line that is not JSON: %q", l)
			}
			switch rec["msg"] {
			case "request":
				lines[fmt.Sprint(rec["status"])]++
			case "request lines not logged":
				summarised += fmt.Sprint(rec["count"]) + " "
			}
		}
		return lines, summarised
	}
	tests := []struct {
		name      string
		advance   time.Duration
		code, n   int
		lines     map[string]int // by status, since the start
		summaries string         // every summary's count, since the start
	}{
		{"a flood of refusals: the burst is logged", 0, 401, 250, map[string]int{"401": 100}, ""},
		{"the next line logged is preceded by the count", 0, 200, 30, map[string]int{"401": 100, "200": 30}, "150 "},
		{"failures are all logged", 0, 500, 5, map[string]int{"401": 100, "200": 30, "500": 5}, "150 "},
		{"more refusals, none left to log", 0, 401, 40, map[string]int{"401": 100, "200": 30, "500": 5}, "150 "},
		{"503s are refusals too (not ready, draining)", 0, 503, 10, map[string]int{"401": 100, "200": 30, "500": 5}, "150 "},
		{"a second on, a line; no count within ten seconds of the last", time.Second, 429, 1, map[string]int{"401": 100, "200": 30, "500": 5, "429": 1}, "150 "},
		{"ten seconds on, the count again", 10 * time.Second, 200, 1, map[string]int{"401": 100, "200": 31, "500": 5, "429": 1}, "150 50 "},
	}
	for _, tt := range tests {
		clock = clock.Add(tt.advance)
		send(tt.code, tt.n)
		lines, summaries := count()
		if !maps.Equal(lines, tt.lines) || summaries != tt.summaries {
			t.Errorf("%s: lines %v, summaries %q; want %v, %q", tt.name, lines, summaries, tt.lines, tt.summaries)
		}
	}
}

// TestCloseQuote: a transport error's text is held to twice its bound,
// which can cut an input's quotation before it closes; what is left of
// it goes, as a closed quotation does.
func TestCloseQuote(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{`malformed Last-Event-ID "EEEEEEEE`, `malformed Last-Event-ID "…`},
		{`a "…" then "EEEE`, `a "…" then "…`},
		{`a "…" then nothing`, `a "…" then nothing`},
		{`escaped "E\"E`, `escaped "…`},
		{`ends in an escape "EE\`, `ends in an escape "…`},
		{`no quotes at all`, `no quotes at all`},
		{`"`, `"…`},
	} {
		if got := unquote(tt.in); got != tt.want {
			t.Errorf("unquote(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestServerErrorLog: net/http's error lines, which a client can make as
// fast as it connects (a failed TLS handshake is one), are budgeted as
// refused requests' lines are, the count of those left out logged with a
// later line; every failed handshake is counted, logged or not.
func TestServerErrorLog(t *testing.T) {
	var logs bytes.Buffer
	var handshakes counter
	el := ServerErrorLog(slog.New(slog.NewJSONHandler(&logs, nil)), &handshakes)
	clock := time.Now()
	el.Writer().(*errorLines).now = func() time.Time { return clock }
	count := func() (lines int, summarised string) {
		for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
			var rec map[string]any
			if err := json.Unmarshal([]byte(l), &rec); err != nil {
				t.Fatalf("a log line that is not JSON: %q", l)
			}
			if rec["level"] != "WARN" {
				t.Errorf("a line at %v: %q", rec["level"], l)
			}
			if rec["msg"] == "server error lines not logged" {
				summarised += fmt.Sprint(rec["count"]) + " "
			} else {
				lines++
			}
		}
		return lines, summarised
	}
	for _, tt := range []struct {
		name       string
		advance    time.Duration
		line       string
		n          int
		lines      int
		summaries  string
		handshakes int
	}{
		{"a flood of failed handshakes: the burst is logged", 0, "http: TLS handshake error from 192.0.2.1:4711: EOF", 250, 100, "", 250},
		{"another error line, held back too", 0, "http: Accept error: too many open files", 10, 100, "", 250},
		{"ten seconds on, a line and the count before it", 10 * time.Second, "http: TLS handshake error from 192.0.2.9:4711: remote error: tls: bad certificate", 1, 101, "160 ", 251},
		{"a line of a client's text is cut", time.Second, "http: " + strings.Repeat("x", 5000), 1, 102, "160 ", 251},
	} {
		clock = clock.Add(tt.advance)
		for range tt.n {
			el.Print(tt.line)
		}
		lines, summaries := count()
		if lines != tt.lines || summaries != tt.summaries || int(handshakes) != tt.handshakes {
			t.Errorf("%s: %d lines, summaries %q, %d handshakes counted; want %d, %q, %d", tt.name, lines, summaries, handshakes, tt.lines, tt.summaries, tt.handshakes)
		}
	}
	if last := logs.String()[strings.LastIndex(strings.TrimSpace(logs.String()), "\n")+1:]; len(last) > 2*maxErrorLine {
		t.Errorf("a line of %d bytes logged whole", len(last))
	}
}

type counter int

func (c *counter) Inc() { *c++ }
