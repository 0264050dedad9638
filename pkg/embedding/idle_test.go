package embedding

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// TestEmbedAfterConnectionClosed: a request that meets its pooled
// connection closed under it, unanswered (a keep-alive ending as it
// arrives: LiteLLM and vLLM serve on uvicorn, which closes at 5 s), is
// sent again on a new connection at once, without a retry's wait;
// embedding a text twice is harmless. Retries are off, so only the
// transport can send it again.
func TestEmbedAfterConnectionClosed(t *testing.T) {
	var calls atomic.Int32
	var keyed atomic.Bool
	f := &fakeAPI{answer: ok(4)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := r.Header["Idempotency-Key"]; ok {
			keyed.Store(true)
		}
		if calls.Add(1) == 2 {
			// The second request, on the first one's connection: closed
			// unanswered.
			c, _, err := http.NewResponseController(w).Hijack()
			if err != nil {
				t.Error(err)
				return
			}
			c.Close()
			return
		}
		f.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	e := NewOpenAI(OpenAIConfig{BaseURL: srv.URL + "/v1", MaxRetries: -1})
	for i := range 2 {
		if _, err := e.Embed(t.Context(), []string{"x"}); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	if got := calls.Load(); got != 3 {
		t.Errorf("the provider saw %d requests, want 3 (the second sent again)", got)
	}
	if keyed.Load() {
		t.Error("an Idempotency-Key header reached the provider; the transport's marker must not be sent")
	}
}
