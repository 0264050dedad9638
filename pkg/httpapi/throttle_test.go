package httpapi

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
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
			if !keys {
				// Another address of one IPv6 /64 is the same client.
				for range 3 {
					send("", "[2001:db8:0:1::1]:1")
				}
				if rec := send("", "[2001:db8:0:1::2]:1"); rec.Code != http.StatusTooManyRequests {
					t.Errorf("another address in a spent /64: %d, want 429", rec.Code)
				}
			}
		})
	}
}

// TestClientHost: an anonymous caller is its IPv4 host, or the /64 its
// IPv6 address is in, however the address is written; what does not parse
// is kept as it is (a test's or a proxy's made-up address).
func TestClientHost(t *testing.T) {
	for _, tc := range []struct{ remote, want string }{
		{"10.0.0.1:443", "10.0.0.1"},
		{"[::ffff:10.0.0.1]:443", "10.0.0.1"},
		{"[2001:db8:1:2:aaaa::1]:443", "2001:db8:1:2::/64"},
		{"[2001:db8:1:2:ffff:ffff:ffff:ffff]:9", "2001:db8:1:2::/64"},
		{"[2001:db8:1:3::1]:9", "2001:db8:1:3::/64"},
		{"[fe80::1%eth0]:9", "fe80::/64"},
		{"[::1]:9", "::/64"},
		{"pipe", "pipe"},
		{"", ""},
	} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.RemoteAddr = tc.remote
		r.Header.Set("X-Forwarded-For", "192.0.2.7") // from no trusted proxy: ignored
		if got := clientHost(r, nil); got != tc.want {
			t.Errorf("clientHost(%q) = %q, want %q", tc.remote, got, tc.want)
		}
	}
}

// TestClientHostBehindProxies: from a trusted proxy, the caller is the
// address X-Forwarded-For names last that is not a trusted proxy; what a
// client puts left of it, or sends to the service directly, counts for
// nothing.
func TestClientHostBehindProxies(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("2001:db8:ffff::/48")}
	many := strings.Repeat("10.0.0.9, ", 40) + "10.0.0.9"
	for _, tc := range []struct {
		name, remote string
		xff          []string
		want         string
	}{
		{"a client through the ingress", "10.0.0.5:1", []string{"198.51.100.4"}, "198.51.100.4"},
		{"two proxies", "10.0.0.5:1", []string{"198.51.100.4, 10.1.2.3"}, "198.51.100.4"},
		{"a forged entry left of the real one", "10.0.0.5:1", []string{"203.0.113.66, 198.51.100.4"}, "198.51.100.4"},
		{"headers in two lines", "10.0.0.5:1", []string{"203.0.113.66", "198.51.100.4, 10.1.2.3"}, "198.51.100.4"},
		{"no header", "10.0.0.5:1", nil, "10.0.0.5"},
		{"every entry a proxy", "10.0.0.5:1", []string{"10.9.9.9, 10.1.2.3"}, "10.9.9.9"},
		{"a malformed entry", "10.0.0.5:1", []string{"198.51.100.4, not-an-ip"}, "10.0.0.5"},
		{"an entry with a port", "10.0.0.5:1", []string{"198.51.100.4:5555"}, "198.51.100.4"},
		{"an IPv6 entry with a port", "10.0.0.5:1", []string{"[2001:db8:1:2::9]:443"}, "2001:db8:1:2::/64"},
		{"an empty entry", "10.0.0.5:1", []string{"198.51.100.4, "}, "10.0.0.5"},
		{"IPv6 client, its /64", "[2001:db8:ffff::1]:1", []string{"2001:db8:1:2::77"}, "2001:db8:1:2::/64"},
		{"IPv4-mapped", "[::ffff:10.0.0.5]:1", []string{"::ffff:198.51.100.4"}, "198.51.100.4"},
		{"the header from an untrusted address", "198.51.100.9:1", []string{"203.0.113.66"}, "198.51.100.9"},
		{"more entries than are read", "10.0.0.5:1", []string{"203.0.113.66, " + many}, "10.0.0.9"},
	} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.RemoteAddr = tc.remote
		for _, v := range tc.xff {
			r.Header.Add("X-Forwarded-For", v)
		}
		if got := clientHost(r, trusted); got != tc.want {
			t.Errorf("%s: clientHost = %q, want %q", tc.name, got, tc.want)
		}
	}
}
