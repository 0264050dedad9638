package httpapi

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/toolsearch/toolsearch/pkg/embedding"
	"github.com/toolsearch/toolsearch/pkg/search"
)

// TestFailedCredentialsAreBounded: a client address that presents
// credentials matching nothing gets authFailBurst of them, then 429
// before anything it sends is checked, the right credential too, so a
// key or the admin token cannot be guessed at the service's request
// rate. A request without a credential, or with a right one, costs
// nothing, and other addresses are not touched. Status, which answers
// everyone, takes an address out of allowance as bearing no token.
func TestFailedCredentialsAreBounded(t *testing.T) {
	svc := search.New(search.Config{Embedder: embedding.NewLocal(64)})
	if _, err := svc.Build(t.Context(), testSetup(t, true)); err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.DiscardHandler)
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	type step struct {
		addr, token string
		times       int
		want        int    // status of each
		body        string // in the last answer
	}
	tests := []struct {
		name  string
		route func(*authFailures) http.Handler
		steps []step
		after step // authFailEvery later: the first address has one failure to make again
	}{
		{"API keys", func(f *authFailures) http.Handler { return authenticate(logger, svc, proxies{}, f)(ok) }, []step{
			{"10.0.0.1:1", "wrong", authFailBurst, 401, "unauthorized"},
			{"10.0.0.1:2", "key-all", 1, 429, "too_many_failed_attempts"},
			{"10.0.0.1:3", "wrong", 1, 429, "retry after 1 s"},
			{"10.0.0.2:1", "key-all", 1, 204, ""},
			{"10.0.0.3:1", "", authFailBurst + 5, 401, "unauthorized"}, // no credential: no guess
			{"10.0.0.3:1", "key-all", 1, 204, ""},
			{"10.0.0.4:1", "key-all", authFailBurst + 5, 204, ""},
		}, step{"10.0.0.1:1", "wrong", 1, 401, "unauthorized"}},
		{"the admin token", func(f *authFailures) http.Handler { return requireToken(logger, "adm", proxies{}, f)(ok) }, []step{
			{"10.0.0.1:1", "key-all", authFailBurst, 401, "the admin token is required"},
			{"10.0.0.1:2", "adm", 1, 429, "too_many_failed_attempts"},
			{"10.0.0.2:1", "adm", 1, 204, ""},
		}, step{"10.0.0.1:1", "adm", 1, 204, ""}},
		{"status", func(f *authFailures) http.Handler {
			return handleStatus(svc, statusPage{svc: svc}, "adm", proxies{}, f)
		}, []step{
			{"10.0.0.1:1", "wrong", authFailBurst, 200, `"detail":"summary"`},
			{"10.0.0.1:2", "adm", 1, 200, `"detail":"summary"`}, // out of allowance: no token looked at
			{"10.0.0.2:1", "key-all", authFailBurst + 5, 200, `"detail":"summary"`},
			{"10.0.0.2:2", "adm", 1, 200, `"detail":"full"`}, // an API key is no failure
		}, step{"10.0.0.1:1", "adm", 1, 200, `"detail":"full"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fails := newAuthFailures(nil)
			t0 := time.Unix(1_000_000, 0)
			fails.now = func() time.Time { return t0 }
			h := tt.route(fails)
			send := func(i int, s step) {
				var rec *httptest.ResponseRecorder
				for j := range s.times {
					r := httptest.NewRequest(http.MethodGet, "/mcp/tool-search/status", nil)
					r.RemoteAddr = s.addr
					if s.token != "" {
						r.Header.Set("Authorization", "Bearer "+s.token)
					}
					rec = httptest.NewRecorder()
					h.ServeHTTP(rec, r)
					if rec.Code != s.want {
						t.Fatalf("step %d (%s from %s), request %d: %d %s, want %d", i, s.token, s.addr, j, rec.Code, rec.Body, s.want)
					}
				}
				if !strings.Contains(rec.Body.String(), s.body) || s.want == 429 && rec.Header().Get("Retry-After") != "1" {
					t.Errorf("step %d: %s (Retry-After %q), want %q", i, rec.Body, rec.Header().Get("Retry-After"), s.body)
				}
			}
			for i, s := range tt.steps {
				send(i, s)
			}
			t0 = t0.Add(authFailEvery)
			send(len(tt.steps), tt.after)
		})
	}
}
