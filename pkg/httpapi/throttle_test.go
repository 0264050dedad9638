package httpapi

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolsearch/toolsearch/pkg/embedding"
	"github.com/toolsearch/toolsearch/pkg/search"
)

// TestSearchThrottle: past its burst, a caller gets 429 with Retry-After;
// other keys and other addresses keep their own budgets.
func TestSearchThrottle(t *testing.T) {
	for _, keys := range []bool{true, false} {
		t.Run(fmt.Sprintf("keys=%v", keys), func(t *testing.T) {
			reg := prometheus.NewRegistry()
			svc := search.New(search.Config{Embedder: embedding.NewLocal(64), Registerer: reg})
			if _, err := svc.Build(t.Context(), testSetup(t, keys)); err != nil {
				t.Fatal(err)
			}
			h := NewServer(svc, Options{Registerer: reg, SearchRate: 0.01, SearchBurst: 3})
			send := func(token, addr string) *httptest.ResponseRecorder {
				r := httptest.NewRequest(http.MethodPost, "/mcp/tool-search", strings.NewReader(`{"query":"merge a pull request"}`))
				r.RemoteAddr = addr
				if token != "" {
					r.Header.Set("Authorization", "Bearer "+token)
				}
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, r)
				return rec
			}
			first, other := "key-all", "key-gh"
			if !keys {
				first, other = "", ""
			}
			for i := range 3 {
				if rec := send(first, "10.0.0.1:1"); rec.Code != 200 {
					t.Fatalf("request %d within the burst: %d %s", i, rec.Code, rec.Body)
				}
			}
			rec := send(first, "10.0.0.1:2")
			if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") == "" || !strings.Contains(rec.Body.String(), `"rate_limited"`) {
				t.Errorf("past the burst: %d %q %s, want 429 with Retry-After", rec.Code, rec.Header().Get("Retry-After"), rec.Body)
			}
			addr := "10.0.0.1:3"
			if !keys {
				addr = "10.0.0.2:1" // anonymous budgets are per address
			}
			if rec := send(other, addr); rec.Code != 200 {
				t.Errorf("another caller: %d %s", rec.Code, rec.Body)
			}
		})
	}
}
