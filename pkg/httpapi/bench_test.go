package httpapi

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
)

// BenchmarkLocalHost: the loopback Host check runs on every request, on a
// pod's address and on a desktop's loopback.
func BenchmarkLocalHost(b *testing.B) {
	h := localHost(slog.New(slog.DiscardHandler))(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	for _, tt := range []struct {
		name string
		addr net.Addr
	}{{"pod", &net.TCPAddr{IP: net.ParseIP("10.1.2.3"), Port: 8080}}, {"loopback", &net.TCPAddr{IP: net.ParseIP("127.0.0.1"), Port: 8080}}} {
		b.Run(tt.name, func(b *testing.B) {
			r := httptest.NewRequest("POST", "/mcp/tool-search", nil)
			r.Host = "localhost:8080"
			r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, tt.addr))
			w := httptest.NewRecorder()
			b.ReportAllocs()
			for b.Loop() {
				h.ServeHTTP(w, r)
			}
		})
	}
}
