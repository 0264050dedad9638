package search

import (
	"bytes"
	"context"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/toolsearch/toolsearch/pkg/embedding"
)

// A tool whose text is over the provider's input length is embedded by
// its head (package embedding) and named in the log, once: a rebuild
// takes its vector from the build cache.
func TestCutTextsAreLogged(t *testing.T) {
	var log bytes.Buffer
	p := &faultyProvider{}
	p.srv = httptest.NewServer(p)
	t.Cleanup(p.srv.Close)
	p.fault.Store("long")
	emb := embedding.NewOpenAI(embedding.OpenAIConfig{BaseURL: p.srv.URL + "/v1", APIKey: "sk-fault-test", Dimensions: 4, MaxRetries: -1})
	long := strings.Repeat("It lists every order a customer placed, with its lines. ", 60)
	setup := parsed(t, []byte(`{"servers":[{"name":"shop","tools":[{"name":"send_invoice","description":"Send an invoice."},{"name":"list_orders","description":"`+long+`"},{"name":"refund","description":"Refund a payment."}]}]}`))
	svc := New(Config{Embedder: emb, Logger: slog.New(slog.NewJSONHandler(&log, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Load: func(context.Context) (*Setup, error) { return setup, nil }})
	for range 2 {
		if _, err := svc.Rebuild(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	if st := svc.Status(); st.Mode != "semantic" {
		t.Errorf("mode %q, want semantic", st.Mode)
	}
	if got := strings.Count(log.String(), "embedded by their head"); got != 1 || !strings.Contains(log.String(), `"count":1,"first":["shop/list_orders"]`) {
		t.Errorf("%d warnings of cut texts over two builds, want one naming shop/list_orders:\n%s", got, log.String())
	}
}
