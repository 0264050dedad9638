package httpapi

import (
	"context"
	"math"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/toolsearch/toolsearch/pkg/access"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/time/rate"
)

// maxAnonymousBuckets bounds the per-address buckets of anonymous callers:
// a caller rotating addresses only evicts the oldest, never grows memory.
const maxAnonymousBuckets = 4096

// throttle limits search requests to rps a second per API key, with
// bursts of burst, so that uncached queries cannot turn into unbounded
// embedding-provider calls. Without keys (anonymous), each client address
// has its own budget. Over it: 429 with Retry-After.
func throttle(rps float64, burst int) func(http.Handler) http.Handler {
	if rps <= 0 {
		return func(next http.Handler) http.Handler { return next }
	}
	burst = max(burst, 1)
	var mu sync.Mutex
	keyed := map[string]*rate.Limiter{} // bounded by the configured keys
	anon, _ := lru.New[string, *rate.Limiter](maxAnonymousBuckets)
	limiter := func(r *http.Request) *rate.Limiter {
		// authenticate says who the caller is: its key, or without one its
		// address (clientHost, proxies resolved), worked out once.
		caller := access.CallerFrom(r.Context())
		mu.Lock()
		defer mu.Unlock()
		if caller.Key != "" {
			l := keyed[caller.Key]
			if l == nil {
				l = rate.NewLimiter(rate.Limit(rps), burst)
				keyed[caller.Key] = l
			}
			return l
		}
		host := caller.Address
		l, ok := anon.Get(host)
		if !ok {
			l = rate.NewLimiter(rate.Limit(rps), burst)
			anon.Add(host, l)
		}
		return l
	}
	retry := strconv.Itoa(int(math.Ceil(1 / rps)))
	refuse := func(w http.ResponseWriter, r *http.Request) {
		drain(r.Body) // so a client still sending a large body reads the 429
		w.Header().Set("Retry-After", retry)
		writeError(w, r, nil, errorf(http.StatusTooManyRequests, "rate_limited",
			"more than %g search requests a second (bursts of %d) for this caller; retry after %s s", rps, burst, retry))
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			l := limiter(r)
			if !l.Allow() {
				refuse(w, r)
				return
			}
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), chargeKey{}, charger{l, refuse})))
		})
	}
}

// charger takes more units of work from a request's budget than the one
// the request itself cost.
type charger struct {
	l      *rate.Limiter
	refuse http.HandlerFunc
}

type chargeKey struct{}

// charge takes n more units from the caller's budget for work a request
// does beyond its own (each further provider call it makes). When the
// budget is spent it answers 429 and reports false. Without a throttle,
// or n of 0, it allows.
func charge(w http.ResponseWriter, r *http.Request, n int) bool {
	c, ok := r.Context().Value(chargeKey{}).(charger)
	if !ok || n <= 0 || c.l.AllowN(time.Now(), n) {
		return true
	}
	c.refuse(w, r)
	return false
}

// clientHost is who an anonymous request comes from, for its rate
// budget, its MCP sessions and what it teaches: the host part of its
// address, and for IPv6 the /64 network it is in. One IPv6 client is
// routed a /64 and picks addresses in it freely (privacy addresses
// rotate by themselves), so an address alone would make one client as
// many callers as it likes: as many budgets, and as many of the distinct
// callers learning asks for before a word counts.
//
// A request from a trusted proxy comes from the address X-Forwarded-For
// names last that is not a trusted proxy itself: each proxy appends the
// address it heard from, so the entries left of the last untrusted one
// are whatever the client chose to send. From anyone else the header is
// ignored.
func clientHost(r *http.Request, trusted []netip.Prefix) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	ip = ip.Unmap().WithZone("")
	if isTrusted(ip, trusted) {
		ip = forwardedFor(r.Header.Values("X-Forwarded-For"), ip, trusted)
	}
	if ip.Is4() {
		return ip.String()
	}
	p, _ := ip.Prefix(64)
	return p.String()
}

// maxForwarded bounds the X-Forwarded-For entries read, from the right:
// more proxies than this in front of one service is a header made up.
const maxForwarded = 16

// forwardedFor is the address the values of X-Forwarded-For name last
// that is not trusted, or, when every one is, the first of them; from,
// the trusted proxy's own, when none parses.
func forwardedFor(values []string, from netip.Addr, trusted []netip.Prefix) netip.Addr {
	seen := 0
	for i := len(values) - 1; i >= 0; i-- {
		v := values[i]
		for v != "" && seen < maxForwarded {
			var entry string
			if j := strings.LastIndexByte(v, ','); j >= 0 {
				v, entry = v[:j], v[j+1:]
			} else {
				v, entry = "", v
			}
			seen++
			ip, err := forwardedAddr(strings.TrimSpace(entry))
			if err != nil {
				return from // a malformed chain: no entry in it can be trusted
			}
			from = ip.Unmap().WithZone("")
			if !isTrusted(from, trusted) {
				return from
			}
		}
	}
	return from
}

// forwardedAddr reads one X-Forwarded-For entry: an address, or one with
// a port as some proxies write it (198.51.100.4:5555, [2001:db8::1]:443).
func forwardedAddr(entry string) (netip.Addr, error) {
	if ip, err := netip.ParseAddr(entry); err == nil {
		return ip, nil
	}
	ap, err := netip.ParseAddrPort(entry)
	return ap.Addr(), err
}

func isTrusted(ip netip.Addr, trusted []netip.Prefix) bool {
	for _, p := range trusted {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}
