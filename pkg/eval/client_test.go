package eval

import (
	"bytes"
	"context"
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

// TestSearchWaitsOutUnavailable: a 503, or a proxy's 502 or 504, is
// waited out as Retry-After says, or longer each time without one, and
// the query asked again; a sixth stops the run (ErrRefused) rather than
// counting as a miss.
func TestSearchWaitsOutUnavailable(t *testing.T) {
	second := time.Second
	for _, tt := range []struct {
		name       string
		status     int
		retryAfter string
		refusals   int32
		waits      []time.Duration
	}{
		{"busy once", http.StatusServiceUnavailable, "1", 1, []time.Duration{second}},
		{"a proxy's 502 twice", http.StatusBadGateway, "", 2, []time.Duration{second, 2 * second}},
		{"a proxy's 504, Retry-After longer than the backoff", http.StatusGatewayTimeout, "10", 1, []time.Duration{10 * second}},
		{"unavailable every time", http.StatusServiceUnavailable, "", 100, []time.Duration{second, 2 * second, 4 * second, 8 * second, 16 * second}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var asked atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if asked.Add(1) <= tt.refusals {
					if tt.retryAfter != "" {
						w.Header().Set("Retry-After", tt.retryAfter)
					}
					http.Error(w, "upstream connect error; you sent "+r.Header.Get("Authorization"), tt.status)
					return
				}
				w.Header().Set("Content-Type", "application/json")
				w.Write([]byte(`{"tools":[{"name":"t","server":"s","description":"","source":"retrieved"}],"mode":"hybrid","degraded":false,"index_version":"1"}`))
			}))
			defer srv.Close()
			var waited []time.Duration
			h := &HTTPSearcher{BaseURL: srv.URL, Token: "k-secret", wait: func(_ context.Context, d time.Duration) error {
				waited = append(waited, d)
				return nil
			}}
			ans, err := h.Search(t.Context(), search.Request{Query: "q"})
			lasts := tt.refusals > 5
			if err != nil && strings.Contains(err.Error(), "k-secret") {
				t.Errorf("err = %v: the key is quoted", err)
			}
			switch {
			case lasts && !errors.Is(err, ErrRefused):
				t.Errorf("err = %v, want ErrRefused", err)
			case lasts && !strings.Contains(err.Error(), "upstream connect error"):
				t.Errorf("err = %v, want the answer quoted", err)
			case !lasts && (err != nil || len(ans.Tools) != 1):
				t.Errorf("answer %+v, err %v; want the tool", ans, err)
			}
			if !slices.Equal(waited, tt.waits) {
				t.Errorf("waited %v, want %v", waited, tt.waits)
			}
		})
	}
}

// TestSearchBounds: a server that never answers, or never finishes its
// answer, stops the eval instead of holding it (and a CI job) for good;
// an error's body is quoted in part, and an answer past the bound is an
// error, not a truncated decode.
func TestSearchBounds(t *testing.T) {
	// Each reads the request first: net/http notices a client gone only
	// once the body is read.
	silent := func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		<-r.Context().Done()
	}
	stalled := func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"tools":[`))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}
	page := func(code, size int) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(code)
			w.Write(bytes.Repeat([]byte("é"), size/2))
		}
	}
	tests := []struct {
		name    string
		handler http.HandlerFunc
		timeout time.Duration // short only where no answer comes: no case races it
		refused bool          // ErrRefused: the run stops
		want    string        // in the error
		maxLen  int           // of the error's text; 0: any
	}{
		{"no answer", silent, 50 * time.Millisecond, true, "no answer within 50ms", 0},
		{"an answer that stops half way", stalled, 50 * time.Millisecond, true, "no answer within 50ms", 0},
		{"an error page of a megabyte", page(http.StatusInternalServerError, 1<<20), 0, false, "bytes more)", 700},
		{"an answer over the bound", page(http.StatusOK, maxAnswer+2), 0, false, "the answer is over 16777216 bytes", 0},
		{"an error page echoing the key", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprintf(w, "internal error; you sent %s", r.Header.Get("Authorization"))
		}, 0, false, "you sent Bearer [redacted]", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(tt.handler)
			defer srv.Close()
			h := &HTTPSearcher{BaseURL: srv.URL, Token: "ts-key-s3cret", Timeout: tt.timeout}
			_, err := h.Search(t.Context(), search.Request{Query: "q"})
			switch {
			case err == nil:
				t.Fatal("no error")
			case errors.Is(err, ErrRefused) != tt.refused:
				t.Errorf("err = %v; ErrRefused %v, want %v", err, errors.Is(err, ErrRefused), tt.refused)
			case !strings.Contains(err.Error(), tt.want):
				t.Errorf("err = %.200s, want it to say %q", err, tt.want)
			case strings.Contains(err.Error(), "s3cret"):
				t.Errorf("err = %v: the key shows", err)
			case tt.maxLen > 0 && len(err.Error()) > tt.maxLen:
				t.Errorf("err is %d bytes, want at most %d", len(err.Error()), tt.maxLen)
			}
		})
	}
	// Stopped by its caller, the eval is not told the server is silent.
	srv := httptest.NewServer(http.HandlerFunc(silent))
	defer srv.Close()
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(20*time.Millisecond, cancel)
	if _, err := (&HTTPSearcher{BaseURL: srv.URL, Timeout: time.Hour}).Search(ctx, search.Request{Query: "q"}); err == nil || errors.Is(err, ErrRefused) {
		t.Errorf("cancelled search: err = %v, want the cancellation", err)
	}
}
