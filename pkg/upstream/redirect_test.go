package upstream

import (
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
