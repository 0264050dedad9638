package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolsearch/toolsearch/pkg/access"
	"github.com/toolsearch/toolsearch/pkg/catgen"
	"github.com/toolsearch/toolsearch/pkg/catgen/gentest"
	"github.com/toolsearch/toolsearch/pkg/embedding"
	"github.com/toolsearch/toolsearch/pkg/eval"
	"github.com/toolsearch/toolsearch/pkg/inspect"
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
				// One /64 after another of one /48, each within its own
				// burst, and more of them than the buckets kept: the /48's
				// shared budget (16 bursts) runs out all the same.
				ok := 0
				var last *httptest.ResponseRecorder
				for i := range maxAnonymousBuckets + 100 {
					last = send("", fmt.Sprintf("[2001:db8:7:%x::1]:1", i))
					if last.Code == 200 {
						ok++
					}
				}
				if ok != 3*siteShare || last.Code != http.StatusTooManyRequests || !strings.Contains(last.Body.String(), "IPv6 /48") {
					t.Errorf("%d /64s of one /48: %d answered, last %d %s; want %d, then 429 naming the /48", maxAnonymousBuckets+100, ok, last.Code, last.Body, 3*siteShare)
				}
				if rec := send("", "[2001:db8:8::1]:1"); rec.Code != 200 {
					t.Errorf("another /48: %d %s", rec.Code, rec.Body)
				}
			}
		})
	}
}

// TestRotatingAddressesKeepsBudgets: anonymous IPv4 callers, more of them
// than the buckets kept, each spending its burst: the first, come back,
// finds its budget as it left it (it found a fresh one while the oldest
// bucket was let go whatever it held), and newcomers meanwhile share one
// budget of 16 callers'.
func TestRotatingAddressesKeepsBudgets(t *testing.T) {
	reg := prometheus.NewRegistry()
	svc := search.New(search.Config{Embedder: embedding.NewLocal(64), Registerer: reg})
	if _, err := svc.Build(t.Context(), testSetup(t, false)); err != nil {
		t.Fatal(err)
	}
	h := NewServer(svc, Options{Registerer: reg, SearchRate: 0.01, SearchBurst: 3})
	const path = "/mcp/tool-search/servers"
	for i := range maxAnonymousBuckets {
		for j := range 3 {
			if rec := sendTo(h, path, fmt.Sprintf("10.%d.%d.1:1", 1+i>>8, i&0xff)); rec.Code != 200 {
				t.Fatalf("caller %d request %d: %d %s", i, j, rec.Code, rec.Body)
			}
		}
	}
	newcomers := 0
	var last *httptest.ResponseRecorder
	for i := range 3*siteShare + 10 {
		if last = sendTo(h, path, fmt.Sprintf("10.200.%d.%d:1", i>>8, i&0xff)); last.Code == 200 {
			newcomers++
		}
	}
	if newcomers != 3*siteShare || !strings.Contains(last.Body.String(), "new to this service") {
		t.Errorf("newcomers to a table of spent budgets: %d answered, last %d %s; want the %d their shared budget holds, then its refusal", newcomers, last.Code, last.Body, 3*siteShare)
	}
	if rec := sendTo(h, path, "10.1.0.1:1"); rec.Code != http.StatusTooManyRequests {
		t.Errorf("the first caller, back after %d others: %d, want 429: its spent budget kept", maxAnonymousBuckets, rec.Code)
	}
}

// sendTo sends a GET of path from addr.
func sendTo(h http.Handler, path, addr string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodGet, path, nil)
	r.RemoteAddr = addr
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	return rec
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
		r.Header.Set("Forwarded", "for=192.0.2.8")
		if got := clientHost(r, proxies{}); got != tc.want {
			t.Errorf("clientHost(%q) = %q, want %q", tc.remote, got, tc.want)
		}
	}
}

// TestClientHostBehindProxies: from a trusted proxy, the caller is the
// address X-Forwarded-For names last that is not a trusted proxy; what a
// client puts left of it, or sends to the service directly, counts for
// nothing. With forwarded_header: forwarded, the same holds of Forwarded's
// for= nodes, in each of RFC 7239's spellings, where an element naming
// none (no for=, unknown, obfuscated) stops the reading; the header not
// believed is the client's own.
func TestClientHostBehindProxies(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("2001:db8:ffff::/48")}
	many := strings.Repeat("10.0.0.9, ", 40) + "10.0.0.9"
	for _, tc := range []struct {
		name, remote string
		rfc7239      bool
		values       []string
		want         string
	}{
		{"a client through the ingress", "10.0.0.5:1", false, []string{"198.51.100.4"}, "198.51.100.4"},
		{"two proxies", "10.0.0.5:1", false, []string{"198.51.100.4, 10.1.2.3"}, "198.51.100.4"},
		{"a forged entry left of the real one", "10.0.0.5:1", false, []string{"203.0.113.66, 198.51.100.4"}, "198.51.100.4"},
		{"headers in two lines", "10.0.0.5:1", false, []string{"203.0.113.66", "198.51.100.4, 10.1.2.3"}, "198.51.100.4"},
		{"no header", "10.0.0.5:1", false, nil, "10.0.0.5"},
		{"every entry a proxy", "10.0.0.5:1", false, []string{"10.9.9.9, 10.1.2.3"}, "10.9.9.9"},
		{"a malformed entry", "10.0.0.5:1", false, []string{"198.51.100.4, not-an-ip"}, "10.0.0.5"},
		{"an entry with a port", "10.0.0.5:1", false, []string{"198.51.100.4:5555"}, "198.51.100.4"},
		{"an IPv6 entry with a port", "10.0.0.5:1", false, []string{"[2001:db8:1:2::9]:443"}, "2001:db8:1:2::/64"},
		{"an empty entry", "10.0.0.5:1", false, []string{"198.51.100.4, "}, "10.0.0.5"},
		{"IPv6 client, its /64", "[2001:db8:ffff::1]:1", false, []string{"2001:db8:1:2::77"}, "2001:db8:1:2::/64"},
		{"IPv4-mapped", "[::ffff:10.0.0.5]:1", false, []string{"::ffff:198.51.100.4"}, "198.51.100.4"},
		{"the header from an untrusted address", "198.51.100.9:1", false, []string{"203.0.113.66"}, "198.51.100.9"},
		{"more entries than are read", "10.0.0.5:1", false, []string{"203.0.113.66, " + many}, "10.0.0.9"},
		{"Forwarded: a client through the ingress", "10.0.0.5:1", true, []string{"for=198.51.100.4;proto=https;by=10.0.0.5"}, "198.51.100.4"},
		{"Forwarded: a forged element left of the real one", "10.0.0.5:1", true, []string{"for=203.0.113.66", "for=198.51.100.4, for=10.1.2.3"}, "198.51.100.4"},
		{"Forwarded: for= in any case, anywhere in its element", "10.0.0.5:1", true, []string{"proto=https; For=198.51.100.4"}, "198.51.100.4"},
		{"Forwarded: quoted, with a port", "10.0.0.5:1", true, []string{`for="198.51.100.4:5555"`}, "198.51.100.4"},
		{"Forwarded: IPv6 quoted, bracketed, with a port", "10.0.0.5:1", true, []string{`for="[2001:db8:cafe::17]:4711"`}, "2001:db8:cafe::/64"},
		{"Forwarded: IPv6 quoted and bracketed", "10.0.0.5:1", true, []string{`for="[2001:db8:cafe::17]"`}, "2001:db8:cafe::/64"},
		{"Forwarded: no header", "10.0.0.5:1", true, nil, "10.0.0.5"},
		{"Forwarded: unknown", "10.0.0.5:1", true, []string{"for=198.51.100.4, for=unknown"}, "10.0.0.5"},
		{"Forwarded: obfuscated", "10.0.0.5:1", true, []string{"for=_hidden"}, "10.0.0.5"},
		{"Forwarded: an element without for=", "10.0.0.5:1", true, []string{"for=198.51.100.4, proto=https"}, "10.0.0.5"},
		{"Forwarded: a quote left open", "10.0.0.5:1", true, []string{`for="198.51.100.4`}, "10.0.0.5"},
		{"Forwarded: an escape", "10.0.0.5:1", true, []string{`for="198.51.100\.4"`}, "10.0.0.5"},
		{"Forwarded: from an untrusted address", "198.51.100.9:1", true, []string{"for=203.0.113.66"}, "198.51.100.9"},
	} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.RemoteAddr = tc.remote
		believed, other, decoy := "X-Forwarded-For", "Forwarded", "for=192.0.2.8"
		if tc.rfc7239 {
			believed, other, decoy = other, believed, "192.0.2.7"
		}
		for _, v := range tc.values {
			r.Header.Add(believed, v)
		}
		r.Header.Set(other, decoy) // the client's own
		if got := clientHost(r, proxies{trusted: trusted, rfc7239: tc.rfc7239}); got != tc.want {
			t.Errorf("%s: clientHost = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestAssignedNetworks: an IPv6 address in auth.assigned_networks (a
// cluster's pods) is a client of its own, named directly or by a trusted
// proxy, with a budget of its own and no site's to share; other IPv6
// addresses are still counted by their /64 and /48.
func TestAssignedNetworks(t *testing.T) {
	assigned := []netip.Prefix{netip.MustParsePrefix("fd00:10:244::/56")}
	p := proxies{trusted: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}, assigned: assigned}
	for _, tc := range []struct{ remote, forwarded, want string }{
		{"[fd00:10:244:1::a]:1", "", "fd00:10:244:1::a/128"},
		{"[fd00:10:244:1::b]:1", "", "fd00:10:244:1::b/128"},
		{"[fd00:10:245:1::a]:1", "", "fd00:10:245:1::/64"},
		{"10.0.0.5:1", "fd00:10:244:7::c", "fd00:10:244:7::c/128"},
		{"10.0.0.5:1", "2001:db8:1:2::c", "2001:db8:1:2::/64"},
		{"192.0.2.1:1", "", "192.0.2.1"},
	} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.RemoteAddr = tc.remote
		if tc.forwarded != "" {
			r.Header.Set("X-Forwarded-For", tc.forwarded)
		}
		if got := clientHost(r, p); got != tc.want {
			t.Errorf("clientHost(%s, X-Forwarded-For %q) = %q, want %q", tc.remote, tc.forwarded, got, tc.want)
		}
	}

	reg := prometheus.NewRegistry()
	svc := search.New(search.Config{Embedder: embedding.NewLocal(64), Registerer: reg})
	if _, err := svc.Build(t.Context(), testSetup(t, false)); err != nil {
		t.Fatal(err)
	}
	h := NewServer(svc, Options{Registerer: reg, SearchRate: 0.01, SearchBurst: 3, AssignedNetworks: assigned})
	const path = "/mcp/tool-search/servers"
	// More pods of one node's /64 than a site's sixteen budgets hold,
	// each spending its own burst.
	answered := 0
	for i := range 3*siteShare + 30 {
		for range 3 {
			if rec := sendTo(h, path, fmt.Sprintf("[fd00:10:244:1::%x]:1", i+1)); rec.Code == 200 {
				answered++
			}
		}
	}
	if want := 3 * (3*siteShare + 30); answered != want {
		t.Errorf("%d pods of one /64, three requests each: %d answered, want %d", 3*siteShare+30, answered, want)
	}
	if rec := sendTo(h, path, "[fd00:10:244:1::1]:1"); rec.Code != http.StatusTooManyRequests {
		t.Errorf("the first pod past its burst: %d, want 429", rec.Code)
	}
	// Outside the network, another address of a spent /64 is refused.
	for range 3 {
		sendTo(h, path, "[2001:db8:0:1::1]:1")
	}
	if rec := sendTo(h, path, "[2001:db8:0:1::2]:1"); rec.Code != http.StatusTooManyRequests {
		t.Errorf("another address of a spent /64 outside the network: %d, want 429", rec.Code)
	}
}

// FuzzClientHost: whatever a trusted proxy's request carries in either
// header, the caller is the proxy or an address the header named, never
// a panic or a made-up string.
func FuzzClientHost(f *testing.F) {
	p := proxies{trusted: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}
	f.Fuzz(func(t *testing.T, value string, rfc7239 bool) {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.RemoteAddr = "10.0.0.5:1"
		r.Header["Forwarded"] = []string{value}
		r.Header["X-Forwarded-For"] = []string{value}
		p.rfc7239 = rfc7239
		got := clientHost(r, p)
		if got == "10.0.0.5" {
			return
		}
		if ip, err := netip.ParseAddr(got); err == nil && ip.Is4() {
			return
		}
		if pre, err := netip.ParsePrefix(got); err == nil && pre.Bits() == 64 && pre.Addr().Is6() {
			return
		}
		t.Errorf("clientHost = %q from %q: neither the proxy nor an address", got, value)
	})
}

// TestBucket: a request enters for one unit; work spends more, into debt
// past the burst, but only while the caller is not in debt already, unless
// it is charged for work begun; a refusal says when a unit will be there
// again.
func TestBucket(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	type step struct {
		at      time.Duration // after t0
		spend   int           // 0: admit a request
		refused bool
		retry   time.Duration // when refused
		charge  bool          // charged for work begun, not spent
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"the burst, then one a second", []step{
			{0, 0, false, 0, false}, {0, 0, false, 0, false}, {0, 0, false, 0, false},
			{0, 0, true, time.Second, false},
			{time.Second, 0, false, 0, false},
		}},
		{"work past the burst is debt, paid back at the rate", []step{
			{0, 0, false, 0, false},
			{0, 25, false, 0, false}, // 2 left, then 23 owed
			{0, 0, true, 24 * time.Second, false},
			{0, 1, true, 24 * time.Second, false}, // in debt: no more work
			{10 * time.Second, 0, true, 14 * time.Second, false},
			{24 * time.Second, 0, false, 0, false},
		}},
		{"work that the tokens left cover", []step{
			{0, 2, false, 0, false},
			{0, 0, false, 0, false},
			{0, 0, true, time.Second, false},
		}},
		{"work begun is charged in debt, and adds to it", []step{
			{0, 25, false, 0, false}, // 22 owed
			{0, 5, false, 0, true},   // 27 owed
			{0, 0, true, 28 * time.Second, false},
			{0, 1, true, 28 * time.Second, false},
		}},
		{"nothing spent is free", []step{
			{0, 0, false, 0, false}, {0, 0, false, 0, false}, {0, 0, false, 0, false},
			{0, 0, true, time.Second, false},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBucket(1, 3, nil)
			for i, s := range tt.steps {
				now := t0.Add(s.at)
				var err error
				if s.spend == 0 {
					err = b.admitWith(nil, now)
				} else {
					err = b.spend(now, access.WorkRegex, s.spend, !s.charge)
				}
				var oe *access.OverBudgetError
				if errors.As(err, &oe) != s.refused || err != nil && !s.refused {
					t.Fatalf("step %d: %v, want refused %v", i, err, s.refused)
				}
				if s.refused && oe.RetryAfter != s.retry {
					t.Errorf("step %d: retry after %s, want %s", i, oe.RetryAfter, s.retry)
				}
			}
		})
	}
}

// TestBucketsLetGoOnlyFullBuckets: a full table lets go of its least
// recently seen bucket only once that bucket is full again; a newcomer
// meanwhile gets the bucket newcomers share, so rotating through more
// addresses than the table holds finds no spent budget full again.
func TestBucketsLetGoOnlyFullBuckets(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	type step struct {
		at    time.Duration // after t0
		key   int
		admit int  // requests admitted for key, none refused; -1: one refused
		want  bool // key's bucket is the shared one
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"room: each key its own bucket", []step{{0, 1, 1, false}, {0, 2, 1, false}, {0, 3, 1, false}}},
		{"full of spent buckets: a newcomer shares", []step{
			{0, 1, 1, false}, {0, 2, 1, false}, {0, 3, 1, false}, {0, 4, 1, true}, {0, 5, 1, true},
			{0, 1, 0, false}, // kept: its spent unit is remembered
		}},
		{"a full oldest is let go", []step{
			{0, 1, 1, false}, {0, 2, 1, false}, {0, 3, 1, false},
			{3 * time.Second, 4, 1, false}, // every bucket full again: 1 goes
			{3 * time.Second, 1, 3, false}, // 1 is new, with a whole burst
		}},
		{"a spent oldest is passed over for a full one", []step{
			{0, 1, 3, false}, {0, 2, 1, false}, {0, 3, 1, false},
			{2 * time.Second, 4, 1, false}, // 1 has 2 units of 3: kept; 2 is full and goes
			{2 * time.Second, 1, 2, false}, // 1's own bucket: 2 units, and no third
			{2 * time.Second, 1, -1, false},
		}},
		{"past the probes: shared", []step{
			{0, 1, 3, false}, {0, 2, 3, false}, {0, 3, 3, false},
			{time.Second, 4, 1, true},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newBuckets[int](3, func(shared bool) *bucket {
				b := newBucket(1, 3, nil)
				b.crowded = shared
				return b
			})
			for i, s := range tt.steps {
				now := t0.Add(s.at)
				b := c.get(s.key, now)
				if got := b == c.shared; got != s.want {
					t.Fatalf("step %d: key %d shared %v, want %v", i, s.key, got, s.want)
				}
				if s.admit < 0 && b.admitWith(nil, now) == nil {
					t.Fatalf("step %d: key %d admitted, want refused", i, s.key)
				}
				for j := range s.admit {
					if err := b.admitWith(nil, now); err != nil {
						t.Fatalf("step %d: key %d request %d: %v", i, s.key, j, err)
					}
				}
			}
			if c.lru.Len() > 3 {
				t.Errorf("%d buckets kept, want at most 3", c.lru.Len())
			}
		})
	}
	// The shared bucket's refusal says which budget it is.
	c := newBuckets[int](1, func(shared bool) *bucket {
		b := newBucket(1, 1, nil)
		b.crowded = shared
		return b
	})
	if err := c.get(1, t0).admitWith(nil, t0); err != nil {
		t.Fatal(err)
	}
	shared := c.get(2, t0)
	_ = shared.admitWith(nil, t0)
	var oe *access.OverBudgetError
	if err := shared.admitWith(nil, t0); !errors.As(err, &oe) || !oe.Crowded || !strings.Contains(err.Error(), "new to this service") {
		t.Errorf("the shared bucket spent: %v, want its own refusal", err)
	}
}

// TestSiteBudget: a request the site's budget refuses costs the caller
// nothing; work is charged to both, and refused while either is in debt.
func TestSiteBudget(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	caller, site := newBucket(1, 3, nil), newBucket(1, 2, nil)
	site.site = true
	for i := range 2 {
		if err := caller.admitWith(site, t0); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	var oe *access.OverBudgetError
	if err := caller.admitWith(site, t0); !errors.As(err, &oe) || !oe.Site {
		t.Fatalf("past the site's burst: %v, want the site's refusal", err)
	}
	if err := caller.admitWith(nil, t0); err != nil {
		t.Fatalf("the caller's last unit, which the site's refusal must not have taken: %v", err)
	}
	if err := caller.admitWith(nil, t0); !errors.As(err, &oe) || oe.Site {
		t.Fatalf("past the caller's burst: %v, want its own refusal", err)
	}

	caller, site = newBucket(1, 10, nil), newBucket(1, 10, nil)
	site.site = true
	both := siteBudget{caller, site}
	if err := both.Spend(access.WorkRegex, 12); err != nil {
		t.Fatal(err)
	}
	if tc, ts := caller.l.TokensAt(time.Now()), site.l.TokensAt(time.Now()); tc > -1.9 || ts > -1.9 {
		t.Errorf("tokens after a spend of 12 from 10: caller %.1f, site %.1f; want about -2 each", tc, ts)
	}
	other := siteBudget{newBucket(1, 10, nil), site}
	if err := other.Spend(access.WorkRegex, 1); !errors.As(err, &oe) || !oe.Site {
		t.Errorf("another caller of a site in debt: %v, want the site's refusal", err)
	}
	other.Charge(access.WorkReport, 3)
	if ts := site.l.TokensAt(time.Now()); ts > -4.9 {
		t.Errorf("site tokens after a charge of 3 more: %.1f, want about -5", ts)
	}
}

// TestBucketConcurrent: requests of one caller at once each see what the
// others spent, so at most those already admitted run into debt together.
func TestBucketConcurrent(t *testing.T) {
	b := newBucket(0.001, 10, nil)
	var wg sync.WaitGroup
	var spent atomic.Int32
	for range 64 {
		wg.Go(func() {
			if b.admitWith(nil, time.Now()) == nil && b.Spend(access.WorkRegex, 5) == nil {
				spent.Add(1)
			}
		})
	}
	wg.Wait()
	// 10 admitted; the spends of 5 pass while the tokens are not below
	// zero: 9 left after the first admission at most, so at most 2 spends
	// before the debt (9-5=4, 4-5=-1), and the admissions' own units
	// only lower that.
	if n := spent.Load(); n < 1 || n > 2 {
		t.Errorf("%d spends of 5 passed from a burst of 10, want 1 or 2", n)
	}
}

// TestReportSpendsBudget: a catalog report pays for its work before
// doing it: a unit for every 500 tools it lints and, with its audit, one
// for the provider call and the audit's searches by what they rank. A key
// that asked for one has that much less to search with; work dearer than
// the whole burst runs once, and the caller then waits out the debt, told
// how long in Retry-After.
func TestReportSpendsBudget(t *testing.T) {
	cat := gentest.Catalog(t, catgen.Spec{Tools: 10000, Seed: 1})
	svc := search.New(search.Config{Embedder: embedding.NewLocal(64)})
	if _, err := svc.Build(t.Context(), &search.Setup{Catalog: cat}); err != nil {
		t.Fatal(err)
	}
	// Servers adding up to at most the audit's bound of tools.
	var servers []string
	in := map[string]bool{}
	tools := 0
	for _, c := range svc.Current().ServerCounts("") {
		if len(servers) < 64 && tools+c.Tools <= inspect.MaxAuditTools {
			servers, tools = append(servers, c.Name), tools+c.Tools
			in[c.Name] = true
		}
	}
	var rows []int
	for i, tool := range cat.Tools() {
		if in[tool.Server] {
			rows = append(rows, i)
		}
	}
	audited := len(rows)/500 + 1 + len(eval.SelfCases(cat.Subset(rows)))*cat.Len()/search.UnitTools
	q := url.Values{"server": servers}.Encode()
	const rate = 0.001
	tests := []struct {
		name, query string
		units       int // beyond the request's own
		burst       int
	}{
		{"every tool, linted", "", cat.Len() / 500, 200},
		{"some servers, audited", q, audited, 200},
		{"an audit dearer than the burst", q, audited, 20},
	}
	if audited < 50 {
		t.Fatalf("the audit of %d tools costs %d units: too few to tell", tools, audited)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			h := NewServer(svc, Options{SearchRate: rate, SearchBurst: tt.burst, Registerer: reg})
			do := func(method, path, body string) *httptest.ResponseRecorder {
				r := httptest.NewRequest(method, path, strings.NewReader(body))
				r.RemoteAddr = "10.0.0.1:1"
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, r)
				return rec
			}
			start := time.Now()
			if rec := do(http.MethodGet, "/mcp/tool-search/catalog?"+tt.query, ""); rec.Code != http.StatusOK {
				t.Fatalf("report: %d %.300s", rec.Code, rec.Body)
			}
			left := tt.burst - 1 - tt.units
			searches := 0
			for ; searches < tt.burst; searches++ {
				rec := do(http.MethodPost, "/mcp/tool-search", `{"query":"merge a pull request"}`)
				if rec.Code != http.StatusTooManyRequests {
					continue
				}
				// The wait is for the debt and one unit, less what accrued
				// since the bucket was first used (well under a unit here,
				// but a second of the wait for each second the report took:
				// 15 s under make test's load).
				retry, _ := strconv.Atoi(rec.Header().Get("Retry-After"))
				accrued := time.Since(start).Seconds() + 1
				if want := float64(1-min(left, 0)) / rate; float64(retry) > want || float64(retry) < want-accrued || !strings.Contains(rec.Body.String(), `"rate_limited"`) {
					t.Errorf("refused: Retry-After %d, want about %g; %s", retry, want, rec.Body)
				}
				break
			}
			if want := max(left, 0); searches != want {
				t.Errorf("%d searches after the report (%d units), want %d", searches, tt.units, want)
			}
			if rec := do(http.MethodGet, "/mcp/tool-search/catalog?"+tt.query, ""); rec.Code != http.StatusTooManyRequests {
				t.Errorf("another report: %d, want 429", rec.Code)
			}
			// Where the budget went: the report's work, and every request's
			// own unit (the report and the searches admitted), the refused
			// search and report counted apart.
			for name, want := range map[string]float64{
				`toolsearch_budget_units_total{work="report"}`:     float64(tt.units),
				`toolsearch_budget_units_total{work="request"}`:    float64(1 + searches),
				`toolsearch_budget_units_total{work="regex"}`:      0,
				`toolsearch_budget_refusals_total{work="request"}`: 2,
			} {
				if got := gathered(t, reg, name); got != want {
					t.Errorf("%s = %g, want %g", name, got, want)
				}
			}
		})
	}
}

// gathered is the value of one series, named as the exposition format
// writes it (name{label="value"}), in reg; 0 when it is not there.
func gathered(t *testing.T, reg *prometheus.Registry, series string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			name := f.GetName()
			if len(labels) > 0 {
				name += "{" + strings.Join(labels, ",") + "}"
			}
			if name == series {
				return m.GetCounter().GetValue() + m.GetGauge().GetValue()
			}
		}
	}
	return 0
}
