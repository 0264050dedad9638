package upstream

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestRedirectsStayWithTheUpstream: an upstream's configured headers (its
// credentials) go only to its own origin. A redirect within the origin is
// followed; one to another origin is refused, and the other origin never
// sees a request, let alone the headers.
func TestRedirectsStayWithTheUpstream(t *testing.T) {
	var mu sync.Mutex
	var elsewhere []string // what the other origin received
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		elsewhere = append(elsewhere, r.Method+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		http.Error(w, "not an MCP server", http.StatusNotFound)
	}))
	defer other.Close()
	fake := newFake(t, 0, 1).http.Config.Handler
	for _, tt := range []struct {
		name      string
		to        func(r *http.Request) string // where /moved redirects
		wantTools bool
	}{
		{"same origin", func(*http.Request) string { return "/" }, true},
		{"another origin", func(r *http.Request) string { return other.URL + r.URL.Path }, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			moved := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/old" {
					http.Redirect(w, r, tt.to(r), http.StatusTemporaryRedirect)
					return
				}
				fake.ServeHTTP(w, r)
			}))
			t.Cleanup(moved.Close) // after the manager stops: its GET stream holds a connection
			url := moved.URL + "/old"
			m := start(t, []Config{{Name: "u", URL: url, Refresh: time.Hour, Timeout: 2 * time.Second,
				Headers: map[string]string{"Authorization": "Bearer upstream-secret"}}}, nil)
			if got := len(names(m)) > 0; got != tt.wantTools {
				t.Errorf("tools listed: %v, want %v (status %+v)", got, tt.wantTools, m.Status()[0])
			}
			if st := m.Status()[0]; !tt.wantTools && !strings.Contains(st.LastError, "another origin") {
				t.Errorf("status last_error %q does not say why", st.LastError)
			}
			mu.Lock()
			defer mu.Unlock()
			for _, req := range elsewhere {
				if strings.Contains(req, "upstream-secret") {
					t.Errorf("the other origin received the upstream's credentials: %q", req)
				}
			}
			if len(elsewhere) > 0 {
				t.Errorf("the other origin received %d requests (%v); want none", len(elsewhere), elsewhere)
			}
		})
	}
}

// TestRedirectQueryNotShown: a call redirected within the upstream's
// origin to a signed address that then refuses it fails naming where it
// went, but not the signature in that address's query: Go's error quotes
// the whole URL, and the caller of call_tool was shown it.
func TestRedirectQueryNotShown(t *testing.T) {
	const signature = "X-Amz-Signature=5f2b8c0e9d1a4c6b"
	fake := newFake(t, 0, 1).http.Config.Handler
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/signed":
			http.Error(w, "<html>403 Forbidden</html>", http.StatusForbidden)
		case r.Method == http.MethodPost && r.Header.Get("Mcp-Method") == "tools/call",
			r.Method == http.MethodPost && strings.Contains(peek(r), `"tools/call"`):
			http.Redirect(w, r, "/signed?"+signature, http.StatusTemporaryRedirect)
		default:
			fake.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(front.Close)
	m := start(t, []Config{{Name: "u", URL: front.URL + "/mcp", Refresh: time.Hour, Timeout: 2 * time.Second}}, nil)
	_, err := m.Call(t.Context(), "u", "tool_0", nil, CallOptions{})
	if err == nil || !strings.Contains(err.Error(), "403") || !strings.Contains(err.Error(), "/signed") {
		t.Fatalf("Call = %v; want the refusal, naming where the redirect went", err)
	}
	for _, where := range []string{err.Error(), m.Status()[0].LastCallError, m.Status()[0].LastError} {
		if strings.Contains(where, "5f2b8c0e") {
			t.Errorf("the redirect's signature is shown: %q", where)
		}
	}
}

// peek reads r's body and puts it back.
func peek(r *http.Request) string {
	b, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(b))
	return string(b)
}
