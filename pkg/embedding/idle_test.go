package embedding

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolsearch/toolsearch/pkg/internal/keepalive"
)

// TestEmbedAfterIdleKeepAlive: a request sent on a pooled connection the
// provider closes as it arrives (a keep-alive running out: LiteLLM and
// vLLM serve on uvicorn, 5 s) is sent again on a new connection at once,
// without a retry's wait or its count; embedding a text twice is
// harmless. Retries are off, so only the transport can send it again.
func TestEmbedAfterIdleKeepAlive(t *testing.T) {
	const serverIdle = 100 * time.Millisecond
	f := &fakeAPI{answer: ok(4)}
	var keyed atomic.Bool
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := r.Header["Idempotency-Key"]; ok {
			keyed.Store(true)
		}
		f.ServeHTTP(w, r)
	}))
	srv.Listener = keepalive.Listener(srv.Listener, serverIdle)
	srv.Start()
	t.Cleanup(srv.Close)
	e := NewOpenAI(OpenAIConfig{BaseURL: srv.URL + "/v1", MaxRetries: -1})
	for i := range 3 {
		if i > 0 {
			time.Sleep(3 * serverIdle)
		}
		if _, err := e.Embed(t.Context(), []string{"x"}); err != nil {
			t.Fatalf("request %d, after the provider's keep-alive ran out: %v", i, err)
		}
	}
	if got := f.calls.Load(); got != 3 {
		t.Errorf("the provider answered %d requests, want 3", got)
	}
	if keyed.Load() {
		t.Error("an Idempotency-Key header reached the provider; the transport's marker must not be sent")
	}
}
