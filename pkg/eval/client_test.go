package eval

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolsearch/toolsearch/pkg/search"
)

func TestRetryAfter(t *testing.T) {
	for _, tt := range []struct {
		header string
		want   time.Duration
	}{
		{"3", 3 * time.Second},
		{" 3 ", 3 * time.Second},
		{"60", time.Minute},
		{"1200", time.Minute}, // a long debt: a minute a try
		{"", time.Second},
		{"0", time.Second},
		{"-5", time.Second},
		{"Wed, 21 Oct 2026 07:28:00 GMT", time.Second},
	} {
		if got := retryAfter(tt.header); got != tt.want {
			t.Errorf("retryAfter(%q) = %s, want %s", tt.header, got, tt.want)
		}
	}
}

// TestSearchWaitsOutRateLimit: a 429 is waited out, as long as its
// Retry-After says up to a minute, and the query asked again; a sixth
// refusal is the answer.
func TestSearchWaitsOutRateLimit(t *testing.T) {
	for _, tt := range []struct {
		name     string
		refusals int32
		wantErr  bool
	}{
		{"one refusal", 1, false},
		{"refused every time", 100, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var asked atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if asked.Add(1) <= tt.refusals {
					w.Header().Set("Retry-After", "300")
					w.WriteHeader(http.StatusTooManyRequests)
					return
				}
				w.Header().Set("Content-Type", "application/json")
				w.Write([]byte(`{"tools":[{"name":"t","server":"s","description":"","source":"retrieved"}],"mode":"hybrid","degraded":false,"index_version":"1"}`))
			}))
			defer srv.Close()
			var waited []time.Duration
			h := &HTTPSearcher{BaseURL: srv.URL, wait: func(_ context.Context, d time.Duration) error {
				waited = append(waited, d)
				return nil
			}}
			_, err := h.Search(t.Context(), search.Request{Query: "q"})
			if (err != nil) != tt.wantErr {
				t.Errorf("err = %v, want an error %v", err, tt.wantErr)
			}
			if want := min(tt.refusals+1, 6); asked.Load() != want {
				t.Errorf("asked %d times, want %d", asked.Load(), want)
			}
			for _, d := range waited {
				if d != time.Minute {
					t.Errorf("waited %s for Retry-After 300, want a minute", d)
				}
			}
		})
	}
}
