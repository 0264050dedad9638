package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsearch/toolsearch/pkg/access"

	"github.com/toolsearch/toolsearch/pkg/catalog"
	"github.com/toolsearch/toolsearch/pkg/embedding"
	"github.com/toolsearch/toolsearch/pkg/httpapi"
	"github.com/toolsearch/toolsearch/pkg/redact"
	"github.com/toolsearch/toolsearch/pkg/search"
)

// hostileRig is the MCP endpoint behind the HTTP API with small session
// limits and two keys.
func hostileRig(t *testing.T, lim SessionLimits) (*Server, string) {
	t.Helper()
	cat, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	return rigWith(t, lim, cat)
}

func rigWith(t *testing.T, lim SessionLimits, cat *catalog.Catalog) (*Server, string) {
	t.Helper()
	svc := search.New(search.Config{Embedder: embedding.NewLocal(64)})
	keys := []access.Key{{Name: "a", Hash: sha256.Sum256([]byte("key-a"))}, {Name: "b", Hash: sha256.Sum256([]byte("key-b"))}}
	if _, err := svc.Build(context.Background(), &search.Setup{Catalog: cat, Keys: keys}); err != nil {
		t.Fatal(err)
	}
	srv := New(svc, Options{Sessions: lim})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); srv.Run(ctx) }()
	api := httptest.NewServer(httpapi.NewServer(svc, httpapi.Options{MCP: srv.Handler()}))
	t.Cleanup(func() { api.Close(); cancel(); <-done })
	return srv, api.URL + "/mcp"
}

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

func post(t *testing.T, url, key, session, body string) (*http.Response, string) {
	t.Helper()
	return postWith(t, url, session, body, http.Header{"Authorization": {"Bearer " + key}})
}

// postWith posts body in session ("": none) with header's fields too.
func postWith(t *testing.T, url, session, body string, header http.Header) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		req.Header[k] = v
	}
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func sdkSessions(s *Server) int {
	n := 0
	for range s.srv.Sessions() {
		n++
	}
	return n
}

// TestInitializeFloodIsCapped: a flood of initialize calls keeps at most
// MaxPerKey sessions of that key and Max in all, closing the idlest;
// other keys still get in.
func TestInitializeFloodIsCapped(t *testing.T) {
	srv, url := hostileRig(t, SessionLimits{Max: 12, MaxPerKey: 8})
	for i := range 300 {
		if resp, body := post(t, url, "key-a", "", initBody); resp.StatusCode != 200 {
			t.Fatalf("initialize %d: %d %s", i, resp.StatusCode, body)
		}
	}
	if n, m := srv.sessions.count(), sdkSessions(srv); n > 8 || m > 8+1 {
		t.Errorf("after 300 initialize calls from one key: %d tracked, %d held by the SDK; want at most 8", n, m)
	}
	var last string
	for i := range 20 {
		resp, body := post(t, url, "key-b", "", initBody)
		if resp.StatusCode != 200 {
			t.Fatalf("key b initialize %d: %d %s", i, resp.StatusCode, body)
		}
		last = resp.Header.Get("Mcp-Session-Id")
	}
	if n := srv.sessions.count(); n > 12 {
		t.Errorf("%d sessions tracked, want at most 12 in total", n)
	}
	// The newest session works; presented with another key, it does not exist.
	ping := `{"jsonrpc":"2.0","id":2,"method":"ping"}`
	if resp, body := post(t, url, "key-b", last, ping); resp.StatusCode != 200 {
		t.Errorf("ping on the newest session: %d %s", resp.StatusCode, body)
	}
	if resp, body := post(t, url, "key-a", last, ping); resp.StatusCode != 404 || !strings.Contains(body, `"code":-32001`) {
		t.Errorf("key a using key b's session: %d %s, want 404 JSON", resp.StatusCode, body)
	}
}

// TestIdleSessionsClose: a session with no request for the idle time is
// closed and forgotten.
func TestIdleSessionsClose(t *testing.T) {
	srv, url := hostileRig(t, SessionLimits{Idle: 50 * time.Millisecond})
	resp, _ := post(t, url, "key-a", "", initBody)
	id := resp.Header.Get("Mcp-Session-Id")
	deadline := time.Now().Add(10 * time.Second)
	for sdkSessions(srv) > 0 {
		if time.Now().After(deadline) {
			t.Fatal("an idle session was never closed")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if resp, _ := post(t, url, "key-a", id, `{"jsonrpc":"2.0","id":2,"method":"ping"}`); resp.StatusCode != 404 {
		t.Errorf("the closed session answered %d", resp.StatusCode)
	}
}

// TestMCPErrorsAreBoundedJSON: transport errors on /mcp are JSON-RPC
// errors (a numeric code, never 0) that neither grow with the input nor
// quote it.
func TestMCPErrorsAreBoundedJSON(t *testing.T) {
	_, url := hostileRig(t, SessionLimits{})
	big := strings.Repeat("M", 3<<20)
	half := strings.Repeat("M", 500<<10)
	tests := []struct {
		name, body, header, value string
		status                    int
	}{
		{"a 3 MB method", `{"jsonrpc":"2.0","id":1,"method":"` + big + `"}`, "", "", 413},
		{"a 500 KB method", `{"jsonrpc":"2.0","id":1,"method":"` + half + `"}`, "", "", 400},
		{"a 500 KB id", `{"jsonrpc":"2.0","id":"` + half + `","method":"ping"}`, "", "", 400},
		{"a method of odd characters", `{"jsonrpc":"2.0","id":1,"method":"<script>"}`, "", "", 400},
		{"not JSON", `MMMMMMMMMMMM`, "", "", 400},
		{"an unknown protocol version", initBody, "Mcp-Protocol-Version", "MMMM-" + strings.Repeat("M", 2000), 400},
		{"an unknown session", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, "Mcp-Session-Id", strings.Repeat("M", 2000), 404},
		{"a compressed body", initBody, "Content-Encoding", "gzip", 415},
		{"an odd content coding", initBody, "Content-Encoding", "identity, " + strings.Repeat("M", 2000), 415},
		{"a key the service does not know", initBody, "Authorization", "Bearer " + strings.Repeat("M", 2000), 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(tt.body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Authorization", "Bearer key-a")
			if tt.header != "" {
				req.Header.Set(tt.header, tt.value)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			var e struct {
				Error struct {
					Code    int
					Message string
				}
			}
			if resp.StatusCode != tt.status || json.Unmarshal(body, &e) != nil || e.Error.Code == 0 || e.Error.Message == "" {
				t.Errorf("%d %.300s, want %d with a JSON error", resp.StatusCode, body, tt.status)
			}
			if len(body) > 1024 || strings.Contains(string(body), "MMMMMMMM") {
				t.Errorf("the answer (%d bytes) echoes the input: %.300s", len(body), body)
			}
		})
	}
	// A well-formed request still works.
	resp, body := post(t, url, "key-a", "", initBody)
	if resp.StatusCode != 200 {
		t.Errorf("initialize: %d %s", resp.StatusCode, body)
	}
	// The SDK quotes a Last-Event-ID it cannot read; its text, held to
	// twice the bound, ended inside the quotation, which went out open.
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer key-a")
	req.Header.Set("Mcp-Session-Id", resp.Header.Get("Mcp-Session-Id"))
	req.Header.Set("Last-Event-ID", strings.Repeat("M", 3000))
	get, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer get.Body.Close()
	b, _ := io.ReadAll(get.Body)
	if get.StatusCode != 400 || strings.Contains(string(b), "MMMMMMMM") {
		t.Errorf("a 3,000-byte Last-Event-ID: %d %.300s; want 400 quoting none of it", get.StatusCode, b)
	}
}

// TestRepeatedHeadersRefused: a field /mcp reads that takes one value,
// given twice, is a 400, whichever value a proxy in between would have
// read. Given once, each is served (or, for an event id of no stream,
// refused for that).
func TestRepeatedHeadersRefused(t *testing.T) {
	_, url := hostileRig(t, SessionLimits{})
	resp, body := post(t, url, "key-a", "", initBody)
	if resp.StatusCode != 200 {
		t.Fatalf("initialize: %d %s", resp.StatusCode, body)
	}
	id := resp.Header.Get("Mcp-Session-Id")
	ping := `{"jsonrpc":"2.0","id":2,"method":"ping"}`
	tests := []struct {
		name, method, body string
		header             http.Header
		once               int // the status given the field once
	}{
		{"Content-Type", http.MethodPost, initBody, http.Header{"Content-Type": {"application/json", "text/plain"}}, 200},
		{"Mcp-Session-Id", http.MethodPost, ping, http.Header{"Mcp-Session-Id": {id, id}}, 200},
		{"Mcp-Protocol-Version", http.MethodPost, ping, http.Header{"Mcp-Session-Id": {id}, "Mcp-Protocol-Version": {"2025-06-18", "2025-03-26"}}, 200},
		{"Last-Event-ID", http.MethodGet, "", http.Header{"Mcp-Session-Id": {id}, "Last-Event-Id": {"0_0", "0_1"}}, 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, twice := range []bool{false, true} {
				req, _ := http.NewRequest(tt.method, url, strings.NewReader(tt.body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				req.Header.Set("Authorization", "Bearer key-a")
				for k, v := range tt.header {
					if !twice {
						v = v[:1]
					}
					req.Header[k] = v
				}
				if tt.method == http.MethodGet {
					ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
					defer cancel()
					req = req.WithContext(ctx)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				b := make([]byte, 512)
				n, _ := io.ReadFull(resp.Body, b)
				resp.Body.Close()
				switch {
				case twice && (resp.StatusCode != 400 || !strings.Contains(string(b[:n]), tt.name+" is given 2 times")):
					t.Errorf("given twice: %d %s; want 400 naming %s", resp.StatusCode, b[:n], tt.name)
				case !twice && (resp.StatusCode != tt.once || strings.Contains(string(b[:n]), "is given")):
					t.Errorf("given once: %d %s; want %d", resp.StatusCode, b[:n], tt.once)
				}
			}
		})
	}
}

// count is the number of sessions tracked.
func (s *sessions) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.byID)
}

// TestGETStreamKeepsSession: a client that only listens on its GET stream
// keeps its session past the idle limit; once it stops listening, the
// session idles out.
func TestGETStreamKeepsSession(t *testing.T) {
	srv, url := hostileRig(t, SessionLimits{Idle: 100 * time.Millisecond})
	resp, _ := post(t, url, "key-a", "", initBody)
	id := resp.Header.Get("Mcp-Session-Id")
	post(t, url, "key-a", id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	ctx, cancel := context.WithCancel(t.Context())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer key-a")
	req.Header.Set("Mcp-Session-Id", id)
	get, err := http.DefaultClient.Do(req)
	if err != nil || get.StatusCode != 200 {
		t.Fatalf("GET stream: %v %v", err, get)
	}
	waitFor(t, "the GET stream to count", func() bool { return srv.sessions.listening(id) })
	time.Sleep(2 * time.Second) // many idle periods and at least one reaper pass
	if resp, body := post(t, url, "key-a", id, `{"jsonrpc":"2.0","id":2,"method":"ping"}`); resp.StatusCode != 200 {
		t.Fatalf("a listening session was closed: %d %s", resp.StatusCode, body)
	}
	cancel()
	get.Body.Close()
	waitFor(t, "the session to idle out once nobody listens", func() bool { return sdkSessions(srv) == 0 })
}

// TestJSONRPCAnswers: what the transport answers itself is JSON-RPC, with
// a code from the specification and never 0.
func TestJSONRPCAnswers(t *testing.T) {
	_, url := hostileRig(t, SessionLimits{})
	resp, _ := post(t, url, "key-a", "", initBody)
	id := resp.Header.Get("Mcp-Session-Id")
	tests := []struct {
		name, session, body string
		status              int
		code                int // 0: no error object expected
	}{
		{"unknown method", id, `{"jsonrpc":"2.0","id":7,"method":"foo/bar"}`, 200, -32601},
		{"unknown notification", id, `{"jsonrpc":"2.0","method":"notifications/foo"}`, 202, 0},
		{"no session id", "", `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`, 400, -32600},
		{"a second initialize", id, initBody, 400, -32600},
		{"a batch", id, `[{"jsonrpc":"2.0","id":4,"method":"ping"},{"jsonrpc":"2.0","id":5,"method":"ping"}]`, 400, -32600},
		{"ping", id, `{"jsonrpc":"2.0","id":8,"method":"ping"}`, 200, 0},
		{"a cursor it did not issue", id, `{"jsonrpc":"2.0","id":9,"method":"tools/list","params":{"cursor":"zzz"}}`, 200, -32602},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := post(t, url, "key-a", tt.session, tt.body)
			var e rpcAnswer
			json.Unmarshal([]byte(body), &e)
			got := 0
			if e.Error != nil {
				got = e.Error.Code
			}
			if resp.StatusCode != tt.status || got != tt.code || strings.Contains(body, `"code":0`) {
				t.Errorf("%d %s; want %d with code %d", resp.StatusCode, body, tt.status, tt.code)
			}
			if strings.Contains(tt.body, "cursor") && !strings.Contains(body, `\"cursor\" is not one this service issued`) {
				t.Errorf("%s; want the answer to name the cursor", body) // the SDK said "invalid params"
			}
		})
	}
}

// TestIDsAnsweredAsSent: a request is answered with its own id, or
// refused. The SDK reads a numeric id through a float64 into an int64,
// and answered 1.5 as 1 and 2^63-1 as -2^63: the client never saw its
// answer.
func TestIDsAnsweredAsSent(t *testing.T) {
	_, url := hostileRig(t, SessionLimits{})
	resp, _ := post(t, url, "key-a", "", initBody)
	session := resp.Header.Get("Mcp-Session-Id")
	tests := []struct {
		id       string
		answered bool // false: refused, 400 and -32600 (-32700 for a body that is not UTF-8)
	}{
		{`7`, true},
		{`0`, true},
		{`-3`, true},
		{`9007199254740991`, true},  // 2^53-1
		{`-9007199254740991`, true}, // -(2^53-1)
		{`1e2`, true},               // 100, one number however it is written
		{`2.0`, true},
		{`"abc"`, true},
		{`""`, true},
		{`"\u0041"`, true}, // "A", one string however it is written
		{`"\ud83d\ude00"`, true},
		{`"a\ud800b"`, false}, // a lone surrogate, read as U+FFFD
		{"\"a\xffb\"", false}, // not UTF-8, read as U+FFFD
		{`1.5`, false},
		{`9007199254740993`, false}, // 2^53+1: no float64 holds it
		{`9223372036854775807`, false},
		{`-9223372036854775809`, false},
		{`1e20`, false},
		{`1e400`, false},
		{`null`, false},
		{`true`, false},
		{`[1]`, false},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			resp, body := post(t, url, "key-a", session, `{"jsonrpc":"2.0","id":`+tt.id+`,"method":"ping"}`)
			var answer rpcAnswer
			if err := json.Unmarshal([]byte(body), &answer); err != nil {
				t.Fatalf("%d %s: %v", resp.StatusCode, body, err)
			}
			if !tt.answered {
				if resp.StatusCode != 400 || answer.Error == nil || answer.Error.Code != -32600 && answer.Error.Code != -32700 ||
					strings.Contains(answer.Error.Message, "…") {
					t.Errorf("%d %s; want 400, -32600 or -32700, saying what is wrong", resp.StatusCode, body)
				}
				return
			}
			if resp.StatusCode != 200 || answer.Error != nil || !sameJSONValue(answer.ID, json.RawMessage(tt.id)) {
				t.Errorf("%d %s; want a result for id %s", resp.StatusCode, body, tt.id)
			}
		})
	}
	// A progress token comes back on every progress notification: held to
	// the same rule.
	resp, body := post(t, url, "key-a", session, `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"search_tools","arguments":{"query":"x"},"_meta":{"progressToken":1.5}}}`)
	if resp.StatusCode != 400 || !strings.Contains(body, "progress token") {
		t.Errorf("progress token 1.5: %d %s; want 400 naming the token", resp.StatusCode, body)
	}
}

// sameJSONValue reports whether a and b are one JSON value: numbers
// compared exactly as decimals, anything else as its text.
func sameJSONValue(a, b json.RawMessage) bool {
	x, okx := new(big.Rat).SetString(string(bytes.TrimSpace(a)))
	y, oky := new(big.Rat).SetString(string(bytes.TrimSpace(b)))
	if okx && oky {
		return x.Cmp(y) == 0
	}
	// Strings compared as read strictly: encoding/json reads a lone
	// surrogate or a byte that is not UTF-8 as U+FFFD, which would make
	// "a\ud800b" and "a\ufffdb" one id.
	var sx, sy string
	if jsonv2.Unmarshal(a, &sx) == nil && jsonv2.Unmarshal(b, &sy) == nil {
		return sx == sy
	}
	return bytes.Equal(bytes.TrimSpace(a), bytes.TrimSpace(b))
}

// TestParamsNotEchoed: params the SDK cannot decode are answered before
// any middleware runs, and its message quoted them whole, 100 KB back for
// 100 KB sent, on a plain JSON answer and on a call's event stream alike.
// The message is now tamed as every other error is; a message with
// another "jsonrpc" than "2.0" says so, and a progress token is held to
// what an id is.
func TestParamsNotEchoed(t *testing.T) {
	_, url := hostileRig(t, SessionLimits{})
	resp, _ := post(t, url, "key-a", "", initBody)
	id := resp.Header.Get("Mcp-Session-Id")
	post(t, url, "key-a", id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	pad := strings.Repeat("A", 100<<10)
	tests := []struct {
		name, body string
		status     int
		code       int
		stream     bool   // answered as an event stream
		want       string // in the message
	}{
		{"a name that is no string", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"pad":"` + pad + `","name":5}}`, 200, -32602, false, `invalid params for tools/call: "name" must be a string, got a number`},
		{"params that are a string", `{"jsonrpc":"2.0","id":4,"method":"tools/list","params":"` + pad + `"}`, 200, -32602, false, "invalid params for tools/list: params must be an object, got a string"},
		{"words, not one run", `{"jsonrpc":"2.0","id":5,"method":"tools/list","params":{"cursor":5,"pad":"` + strings.Repeat("A ", 50<<10) + `"}}`, 200, -32602, false, `invalid params for tools/list: "cursor" must be a string, got a number`},
		{"a call answered as a stream", `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"slack/post_message","pad":"` + pad + `","_meta":7}}`, 200, -32602, true, `invalid params for tools/call: "_meta" must be an object, got a number`},
		{"jsonrpc 1.0", `{"jsonrpc":"1.0","id":7,"method":"ping"}`, 400, -32600, false, `"jsonrpc": "2.0"`},
		{"no jsonrpc", `{"id":8,"method":"ping"}`, 400, -32600, false, `"jsonrpc": "2.0"`},
		// Every progress notification relayed to a call carries its token.
		{"a long progress token", `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"search_tools","arguments":{"query":"x"},"_meta":{"progressToken":"` + pad + `"}}}`, 400, -32600, false, "progress token"},
		{"a progress token that is an object", `{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"search_tools","arguments":{"query":"x"},"_meta":{"progressToken":{"a":1}}}}`, 400, -32600, false, "progress token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := post(t, url, "key-a", id, tt.body)
			data := body
			if stream := resp.Header.Get("Content-Type") == "text/event-stream"; stream != tt.stream {
				t.Fatalf("Content-Type %q; want an event stream: %v", resp.Header.Get("Content-Type"), tt.stream)
			} else if stream {
				_, data, _ = strings.Cut(body, "data: ")
			}
			var e rpcAnswer
			if err := json.Unmarshal([]byte(data), &e); err != nil || e.Error == nil {
				t.Fatalf("%d %.300s: not a JSON-RPC error (%v)", resp.StatusCode, body, err)
			}
			if resp.StatusCode != tt.status || e.Error.Code != tt.code || !strings.Contains(e.Error.Message, tt.want) {
				t.Errorf("%d, code %d, %q; want %d, code %d, naming %s", resp.StatusCode, e.Error.Code, e.Error.Message, tt.status, tt.code, tt.want)
			}
			if len(body) > 2048 || strings.Contains(e.Error.Message, strings.Repeat("A", 65)) {
				t.Errorf("a %d-byte answer echoing the params: %.300s", len(body), body)
			}
		})
	}
}

// TestSetLevel: logging/setLevel takes the specification's levels alone.
// The SDK kept any string in the session's state for its life and logged
// it whole.
func TestSetLevel(t *testing.T) {
	_, url := hostileRig(t, SessionLimits{})
	resp, _ := post(t, url, "key-a", "", initBody)
	id := resp.Header.Get("Mcp-Session-Id")
	post(t, url, "key-a", id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	tests := []struct {
		level string
		code  int // 0: a result
	}{
		{"warning", 0},
		{"emergency", 0},
		{"Warning", -32602},
		{"", -32602},
		{strings.Repeat("L", 100<<10), -32602},
	}
	for _, tt := range tests {
		t.Run(redact.Clip(tt.level, 16, "…"), func(t *testing.T) {
			_, body := post(t, url, "key-a", id, `{"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"`+tt.level+`"}}`)
			var e rpcAnswer
			if err := json.Unmarshal([]byte(body), &e); err != nil {
				t.Fatalf("%v: %.300s", err, body)
			}
			switch {
			case tt.code == 0 && (e.Error != nil || e.Result == nil):
				t.Errorf("%.300s; want a result", body)
			case tt.code != 0 && (e.Error == nil || e.Error.Code != tt.code || !strings.Contains(e.Error.Message, "warning")):
				t.Errorf("%.300s; want error %d naming the levels", body, tt.code)
			case len(body) > 512:
				t.Errorf("a %d-byte answer", len(body))
			}
		})
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestAmbiguousName: a bare name two servers share is "ambiguous" on MCP
// as on HTTP, naming the servers, never an internal error.
func TestAmbiguousName(t *testing.T) {
	cat, err := catalog.New([]catalog.Part{{Source: "t", Servers: []catalog.Server{
		{Name: "mail", Tools: []catalog.Tool{{Name: "send", Description: "Send an email."}}},
		{Name: "chat", Tools: []catalog.Tool{{Name: "send", Description: "Send a chat message."}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	_, url := rigWith(t, SessionLimits{}, cat)
	resp, _ := post(t, url, "key-a", "", initBody)
	id := resp.Header.Get("Mcp-Session-Id")
	_, body := post(t, url, "key-a", id, `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"get_tool_schema","arguments":{"name":"send"}}}`)
	if !strings.Contains(body, `"isError":true`) || !strings.Contains(body, "ambiguous") || !strings.Contains(body, "mail") {
		t.Errorf("get_tool_schema of a shared name: %s; want an isError saying ambiguous and naming the servers", body)
	}
}

// TestErrorsClipInput: what a tool call refuses, it names by a short
// prefix at most, however large the input.
func TestErrorsClipInput(t *testing.T) {
	_, url := hostileRig(t, SessionLimits{})
	resp, _ := post(t, url, "key-a", "", initBody)
	id := resp.Header.Get("Mcp-Session-Id")
	big := strings.Repeat("M", 100<<10)
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_tool_schema","arguments":{"name":"` + big + `"}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"get_tool_schema","arguments":{"name":"x","server":"` + big + `"}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"search_tools","arguments":{"query":"x","operation":"` + big + `"}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"` + big + `","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"search_tools","arguments":{"` + big + `":1}}}`,
	} {
		_, got := post(t, url, "key-a", id, body)
		if len(got) > 2048 || strings.Contains(got, strings.Repeat("M", 65)) {
			t.Errorf("answer of %d bytes quotes the input: %.300s", len(got), got)
		}
	}
}

// A session added while reconcile reads the SDK's list (another caller's
// initialize answered meanwhile) is not in that list, and is live: it
// stays tracked, so its next request is not answered "session not found".
// A session missing from the list that was added before it stays dropped.
func TestReconcileKeepsSessionAddedMeanwhile(t *testing.T) {
	s := newSessions(mcp.NewServer(&mcp.Implementation{Name: "t"}, nil), SessionLimits{})
	s.add("closed", "key-a", "")
	s.add("open", "key-a", "")
	s.live = func() map[string]bool {
		s.add("meanwhile", "key-b", "") // registered as the list is read
		return map[string]bool{"open": true}
	}
	s.reconcile()
	tests := []struct {
		id   string
		kept bool
	}{{"closed", false}, {"open", true}, {"meanwhile", true}}
	for _, tt := range tests {
		if _, ok := s.callerOf(tt.id); ok != tt.kept {
			t.Errorf("session %q tracked after reconcile = %v, want %v", tt.id, ok, tt.kept)
		}
	}
}

// TestSessionsCountPerCaller: sessions count against their key, and
// without keys against their opener's address, so one anonymous client
// holding its sessions busy (GET streams open) does not shut out another
// address; the total still bounds them all.
func TestSessionsCountPerCaller(t *testing.T) {
	type open struct {
		key, addr string
		admitted  bool
	}
	tests := []struct {
		name  string
		steps []open
	}{
		{"one address at its cap, another gets in", []open{
			{"", "10.0.0.1", true}, {"", "10.0.0.1", true}, {"", "10.0.0.1", false}, {"", "10.0.0.2", true},
		}},
		{"one key at its cap, another gets in", []open{
			{"a", "10.0.0.1", true}, {"a", "10.0.0.2", true}, {"a", "10.0.0.3", false}, {"b", "10.0.0.1", true},
		}},
		{"the total bounds every caller", []open{
			{"", "10.0.0.1", true}, {"", "10.0.0.2", true}, {"", "10.0.0.3", true}, {"", "10.0.0.4", false},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSessions(mcp.NewServer(&mcp.Implementation{Name: "t"}, nil), SessionLimits{Max: 3, MaxPerKey: 2})
			live := map[string]bool{}
			s.live = func() map[string]bool { return live }
			for i, o := range tt.steps {
				if got := s.admit(ownerOf(o.key, o.addr)); got != o.admitted {
					t.Fatalf("step %d: %+v admitted %v, want %v", i, o, got, o.admitted)
				}
				if !o.admitted {
					continue
				}
				id := fmt.Sprint("s", i)
				live[id] = true
				s.add(id, o.key, o.addr)
				if !s.enter(id, o.key, true) { // a GET stream: busy for good
					t.Fatalf("step %d: session %s not entered", i, id)
				}
			}
		})
	}
}

// TestLoopbackHost: /mcp on a loopback listener refuses a request naming
// another host (the SDK's DNS-rebinding check), as a JSON-RPC error, and
// serves it with AnyHost.
func TestLoopbackHost(t *testing.T) {
	svc := defaultService(t)
	for _, tt := range []struct {
		anyHost bool
		want    int
	}{{false, 403}, {true, 200}} {
		api := httptest.NewServer(httpapi.NewServer(svc, httpapi.Options{MCP: New(svc, Options{AnyHost: tt.anyHost}).Handler(), AnyHost: tt.anyHost}))
		req, _ := http.NewRequest(http.MethodPost, api.URL+"/mcp", strings.NewReader(initBody))
		req.Host = "rebound.example"
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		api.Close()
		if resp.StatusCode != tt.want || (tt.want == 403 && !strings.Contains(string(body), `"code":-32600`)) {
			t.Errorf("AnyHost %v: initialize with Host rebound.example = %d %.200s, want %d", tt.anyHost, resp.StatusCode, body, tt.want)
		}
	}
}

// TestShutdownEndsStreams: http.Server.Shutdown waits for requests to end,
// and a client's GET stream never would; with EndStreams registered,
// Shutdown returns without reaching its deadline, and the client's stream
// ends. The session itself is not closed by it.
func TestShutdownEndsStreams(t *testing.T) {
	svc := defaultService(t)
	m := New(svc, Options{})
	api := httptest.NewUnstartedServer(httpapi.NewServer(svc, httpapi.Options{MCP: m.Handler()}))
	api.Config.RegisterOnShutdown(m.EndStreams)
	api.Start()
	defer api.Close()
	url := api.URL + "/mcp"
	resp, _ := post(t, url, "", "", initBody)
	id := resp.Header.Get("Mcp-Session-Id")
	post(t, url, "", id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", id)
	get, err := http.DefaultClient.Do(req)
	if err != nil || get.StatusCode != 200 {
		t.Fatalf("GET stream: %v %v", err, get)
	}
	defer get.Body.Close()
	waitFor(t, "the GET stream to count", func() bool { return m.sessions.listening(id) })
	// The deadline only turns a regression into a failure instead of a
	// hang: without EndStreams, Shutdown reaches it whatever its length.
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := api.Config.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown with a client listening: %v", err)
	}
	if _, err := io.ReadAll(get.Body); err != nil {
		t.Errorf("the stream ended with %v, want a clean end", err)
	}
}

// defaultService is a search service over the default catalog, without keys.
func defaultService(t *testing.T) *search.Service {
	t.Helper()
	cat, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	svc := search.New(search.Config{Embedder: embedding.NewLocal(64)})
	if _, err := svc.Build(context.Background(), &search.Setup{Catalog: cat}); err != nil {
		t.Fatal(err)
	}
	return svc
}

// TestParamsInJSONTerms: the SDK's answer to params it cannot read, in
// Go's words, is put in JSON's; any other message is left as it is.
func TestParamsInJSONTerms(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{`handling 'tools/call': invalid params: unmarshaling "{\"name\":5}" into a *mcp.CallToolParamsRaw: json: cannot unmarshal "5}" into Go struct field mcp.CallToolParamsRaw.name of type string`,
			`invalid params for tools/call: "name" must be a string, got a number`},
		{`handling 'tools/list': invalid params: unmarshaling "\"x\"" into a *mcp.ListToolsParams: json: cannot unmarshal "\"x\"" into Go value of type mcp.ListToolsParams`,
			`invalid params for tools/list: params must be an object, got a string`},
		{`handling 'tools/call': invalid params: unmarshaling "{}" into a *mcp.X: json: cannot unmarshal "true}" into Go struct field mcp.X.a.b of type []string`,
			`invalid params for tools/call: "a.b" must be an array, got true or false`},
		{`handling 'tools/call': invalid params: unmarshaling "{}" into a *mcp.X: json: cannot unmarshal "[1]}" into Go struct field mcp.X._meta of type map[string]interface {}`,
			`invalid params for tools/call: "_meta" must be an object, got an array`},
		// A quotation of the params that holds the same words changes nothing.
		{`handling 'ping': invalid params: unmarshaling "json: cannot unmarshal \"1\" into Go value of type string" into a *mcp.PingParams: json: cannot unmarshal "\"j" into Go value of type mcp.PingParams`,
			`invalid params for ping: params must be an object, got a string`},
		{`unknown tool "x"`, `unknown tool "x"`},
		{`handling 'tools/call': invalid params: json: cannot unmarshal "1" into Go value of type json.Number`,
			`handling 'tools/call': invalid params: json: cannot unmarshal "1" into Go value of type json.Number`},
	} {
		if got := paramsInJSONTerms(tt.in); got != tt.want {
			t.Errorf("paramsInJSONTerms(%.80q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestToolSchemaNumbersExact: get_tool_schema sends a schema's numbers as
// the catalog has them, in its structured content and its text. The
// SDK's typed handler read its output back through float64s, and sent a
// default of 1234567890123456789 as 1234567890123456800.
func TestToolSchemaNumbersExact(t *testing.T) {
	const schema = `{"type":"object","properties":{"id":{"type":"integer","default":1234567890123456789,"enum":[9007199254740993,1]},"f":{"type":"number","minimum":0.1}}}`
	cat, err := catalog.New([]catalog.Part{{Source: "t", Servers: []catalog.Server{
		{Name: "chat", Tools: []catalog.Tool{{Name: "get_message", Description: "Read one chat message by its id.", Schemas: catalog.BoundSchemas(json.RawMessage(schema), nil, nil)}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	_, url := rigWith(t, SessionLimits{}, cat)
	resp, _ := post(t, url, "key-a", "", initBody)
	_, body := post(t, url, "key-a", resp.Header.Get("Mcp-Session-Id"), `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"get_tool_schema","arguments":{"name":"get_message"}}}`)
	var answer struct {
		Result struct {
			Content           []struct{ Text string }
			StructuredContent struct{ InputSchema json.RawMessage }
		}
	}
	if err := json.Unmarshal([]byte(body), &answer); err != nil || len(answer.Result.Content) != 1 {
		t.Fatalf("%s: %v", body, err)
	}
	for _, got := range []string{string(answer.Result.StructuredContent.InputSchema), answer.Result.Content[0].Text} {
		for _, want := range []string{"1234567890123456789", "9007199254740993", "0.1"} {
			if !strings.Contains(got, want) {
				t.Errorf("%s; want %s in it", got, want)
			}
		}
	}
}

// rpcAnswer is a JSON-RPC answer as these tests read it.
type rpcAnswer struct {
	ID     json.RawMessage
	Result json.RawMessage
	Error  *struct {
		Code    int
		Message string
	}
}

// TestBodyDeclaredTooLarge: a request whose Content-Length is over its
// route's bound is refused at once, on every route that takes a body,
// with the route's own 413. A client that sent Expect: 100-continue is
// not asked for its body; one that declares 100 GB and sends a few bytes
// is not kept waiting for the rest.
func TestBodyDeclaredTooLarge(t *testing.T) {
	_, mcpURL := hostileRig(t, SessionLimits{})
	u, err := url.Parse(mcpURL)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/mcp", "/mcp/tool-search", "/mcp/tool-search/feedback"} {
		for _, expect := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s expect=%t", path, expect), func(t *testing.T) {
				conn, err := net.Dial("tcp", u.Host)
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close()
				conn.SetDeadline(time.Now().Add(10 * time.Second)) // a hang fails, not stalls, the test
				head := "POST " + path + " HTTP/1.1\r\nHost: " + u.Host + "\r\nAuthorization: Bearer key-a\r\n" +
					"Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 100000000000\r\n"
				if expect {
					head += "Expect: 100-continue\r\n\r\n"
				} else {
					head += "\r\n{\"query\":"
				}
				io.WriteString(conn, head)
				resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(body), "over") {
					t.Errorf("%d %.200s; want 413 at once (a 100 Continue would ask for the body)", resp.StatusCode, body)
				}
			})
		}
	}
}
