package httpapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestLimitScrapes: each client address scrapes a burst, then at the
// rate; past it a 429 rate_limited says when to come back.
func TestLimitScrapes(t *testing.T) {
	type step struct {
		after time.Duration
		from  string
		n     int // scrapes sent
		want  int // of them answered 200
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"a burst, then the rate", []step{
			{0, "192.0.2.1:1000", scrapeBurst + 3, scrapeBurst},
			{time.Second, "192.0.2.1:1001", 5, scrapeRate},
		}},
		{"each address its own", []step{
			{0, "192.0.2.1:1000", scrapeBurst, scrapeBurst},
			{0, "192.0.2.2:1000", scrapeBurst + 1, scrapeBurst},
		}},
		{"the pod itself is not limited", []step{
			{0, "127.0.0.1:1000", 3 * scrapeBurst, 3 * scrapeBurst},
			{0, "[::1]:1000", 3 * scrapeBurst, 3 * scrapeBurst},
		}},
		{"an IPv6 /64 is one client", []step{
			{0, "[2001:db8::1]:1", scrapeBurst, scrapeBurst},
			{0, "[2001:db8::2]:1", 1, 0},
			{0, "[2001:db8:0:1::1]:1", 1, 1},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
			h := limitScrapes(func() time.Time { return now })(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
			for i, s := range tt.steps {
				now = now.Add(s.after)
				got := 0
				for range s.n {
					req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
					req.RemoteAddr = s.from
					rec := httptest.NewRecorder()
					h.ServeHTTP(rec, req)
					switch rec.Code {
					case http.StatusOK:
						got++
					case http.StatusTooManyRequests:
						var body struct{ Error struct{ Code string } }
						if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || body.Error.Code != "rate_limited" || rec.Header().Get("Retry-After") == "" {
							t.Errorf("step %d: a refused scrape: %s %q, Retry-After %q", i, rec.Body, body.Error.Code, rec.Header().Get("Retry-After"))
						}
					default:
						t.Fatalf("step %d: status %d", i, rec.Code)
					}
				}
				if got != s.want {
					t.Errorf("step %d: %d of %d scrapes answered, want %d", i, got, s.n, s.want)
				}
			}
		})
	}
}
