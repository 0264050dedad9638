package httpapi

import (
	"errors"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/toolsearch/toolsearch/pkg/access"
	"github.com/toolsearch/toolsearch/pkg/internal/reqbody"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/time/rate"
)

// maxAnonymousBuckets bounds the per-address buckets of anonymous callers,
// and the per-site ones: a caller rotating addresses never grows memory,
// and never finds a budget it spent full again (see buckets).
const maxAnonymousBuckets = 4096

// evictProbes is how many of a full table's least recently seen buckets a
// newcomer looks at for one that is full, and so can be let go.
const evictProbes = 4

// siteShare is how many callers' budgets the anonymous callers of one
// IPv6 /48 share beside their own. A /48 is what one site is routed, and
// holds 65,536 /64s: with a budget per /64 alone, one holder had as many
// budgets as it cared to use, and by rotating through more /64s than the
// buckets kept it found each one evicted, and so full, when it came
// back. IPv4 addresses are not grouped: they are scarce, and a network of
// them is as often many unrelated clients behind one provider.
const siteShare = 16

// throttle limits each caller to rps units of work a second, with bursts
// of burst, so that uncached queries cannot turn into unbounded
// embedding-provider calls and no caller keeps the cores busy. A request
// costs one unit to enter; work beyond a search's is spent from the same
// budget by whoever does it (access.Spend). With API keys each key has
// its budget; without, each client address. Over it: 429 with
// Retry-After.
func throttle(rps float64, burst int, m *metrics) func(http.Handler) http.Handler {
	if rps <= 0 {
		return func(next http.Handler) http.Handler { return next }
	}
	burst = max(burst, 1)
	var mu sync.Mutex
	keyed := map[string]*bucket{} // bounded by the keys configured since start: only an accepted key gets here
	anon := newBuckets[string](maxAnonymousBuckets, func(shared bool) *bucket {
		if shared {
			b := newBucket(rps*siteShare, burst*siteShare, m)
			b.crowded = true
			return b
		}
		return newBucket(rps, burst, m)
	})
	sites := newBuckets[netip.Prefix](maxAnonymousBuckets, func(shared bool) *bucket {
		// Counted as the callers' own: no metrics of its own.
		b := newBucket(rps*siteShare, burst*siteShare, nil)
		b.site, b.crowded = true, shared
		return b
	})
	// budget is the caller's bucket and, for an anonymous IPv6 caller,
	// its site's.
	budget := func(r *http.Request) (*bucket, *bucket) {
		// authenticate says who the caller is: its key, or without one its
		// address (clientHost, proxies resolved), worked out once.
		caller := access.CallerFrom(r.Context())
		mu.Lock()
		defer mu.Unlock()
		if caller.Key != "" {
			b := keyed[caller.Key]
			if b == nil {
				b = newBucket(rps, burst, m)
				keyed[caller.Key] = b
			}
			return b, nil
		}
		now := time.Now()
		host := caller.Address
		b := anon.get(host, now)
		key, err := netip.ParsePrefix(host)
		if err != nil {
			return b, nil // not a prefix: an IPv4 address (clientHost)
		}
		site, ok := siteOf(key)
		if !ok {
			return b, nil
		}
		return b, sites.get(site, now)
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, site := budget(r)
			if err := b.admitWith(site, time.Now()); err != nil {
				reqbody.Discard(r) // so a client still sending a large body reads the 429
				writeError(w, r, nil, err)
				return
			}
			var spend access.Budget = b
			if site != nil {
				spend = siteBudget{b, site}
			}
			next.ServeHTTP(w, r.WithContext(access.WithBudget(r.Context(), spend)))
		})
	}
}

// buckets holds the buckets of anonymous callers (or of IPv6 sites, or of
// addresses' failed credentials: authFailures), at most size of them, the least recently seen let go first. A bucket is let
// go only once it is full again: the newcomer's bucket is then as full as
// the one let go would have been by now, so a caller that rotates through
// more addresses than the table holds finds each one as it left it, not
// full (before, the table evicted the oldest whatever it held, and a
// rotation through 4,097 addresses met a fresh burst at every one). While
// every bucket a newcomer might replace still holds spent work, newcomers
// share one bucket of 16 callers' budgets: in a flood of new addresses the
// callers already seen keep their budgets, and the flood shares one.
type buckets[K comparable] struct {
	lru    *lru.Cache[K, *bucket]
	size   int
	fresh  func(shared bool) *bucket
	shared *bucket
}

func newBuckets[K comparable](size int, fresh func(shared bool) *bucket) *buckets[K] {
	c, _ := lru.New[K, *bucket](size) // size > 0, so no error
	return &buckets[K]{lru: c, size: size, fresh: fresh, shared: fresh(true)}
}

// get is k's bucket: the one it has, a new one, or the newcomers' shared
// one. Calls are serialised by their caller's lock.
func (c *buckets[K]) get(k K, now time.Time) *bucket {
	if b, ok := c.lru.Get(k); ok {
		return b
	}
	if c.lru.Len() >= c.size && !c.makeRoom(now) {
		return c.shared
	}
	b := c.fresh(false)
	c.lru.Add(k, b) // evicts the oldest, which makeRoom found full
	return b
}

// peek is what get would give k, without making a bucket or marking one
// seen: k's own, nil when k would get a new (full) one, or the shared one.
// Only the oldest bucket is looked at for room.
func (c *buckets[K]) peek(k K, now time.Time) *bucket {
	if b, ok := c.lru.Peek(k); ok {
		return b
	}
	if c.lru.Len() < c.size {
		return nil
	}
	if _, b, ok := c.lru.GetOldest(); !ok || b.full(now) {
		return nil
	}
	return c.shared
}

// makeRoom leaves a full bucket as the least recently seen, for Add to
// let go, and reports whether it found one. A bucket that still holds
// spent work is kept, seen again, so the next look goes further back.
func (c *buckets[K]) makeRoom(now time.Time) bool {
	for range evictProbes {
		k, b, ok := c.lru.GetOldest()
		if !ok {
			return true
		}
		if b.full(now) {
			return true
		}
		c.lru.Get(k)
	}
	return false
}

// siteBudget is an anonymous IPv6 caller's budget: its own, and its
// site's, which the work is charged to as well.
type siteBudget struct{ caller, site *bucket }

// Spend is the caller's, refused too while the site is in debt.
func (s siteBudget) Spend(work access.Work, units int) error {
	now := time.Now()
	if err := s.site.inDebt(now); err != nil {
		s.caller.count(work, 0, err)
		return err
	}
	if err := s.caller.spend(now, work, units, true); err != nil {
		return err
	}
	_ = s.site.spend(now, work, units, false) // never refuses
	return nil
}

// Charge charges both.
func (s siteBudget) Charge(work access.Work, units int) {
	s.caller.Charge(work, units)
	s.site.Charge(work, units)
}

// bucket is one caller's budget: a token bucket that a request enters for
// one unit and that work beyond a search's spends, into debt if need be.
// A caller in debt is refused until it has paid it back at the bucket's
// rate, so work costing more than a burst is still possible, once.
type bucket struct {
	mu   sync.Mutex // admit and Spend read the tokens, then take them
	l    *rate.Limiter
	m    *metrics // nil in tests of the bucket alone, and for a site's
	site bool     // the budget of the anonymous callers of an IPv6 /48
	// crowded: the budget newcomers share while buckets holds no bucket
	// it may let go.
	crowded bool
}

func newBucket(rps float64, burst int, m *metrics) *bucket {
	return &bucket{l: rate.NewLimiter(rate.Limit(rps), burst), m: m}
}

// admitWith takes the unit a request costs to enter from b and, when not
// nil, from site; when either refuses, neither is charged. The site's
// lock is taken inside the caller's, never the other way round.
func (b *bucket) admitWith(site *bucket, now time.Time) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	r := b.l.ReserveN(now, 1) // at most a burst: always OK
	var err error
	if r.DelayFrom(now) > 0 {
		r.CancelAt(now)
		err = b.refusal(now)
	} else if site != nil {
		if err = site.take(now); err != nil {
			r.CancelAt(now)
		}
	}
	if err != nil {
		b.count(workRequest, 0, err)
		return err
	}
	b.count(workRequest, 1, nil)
	return nil
}

// take takes one unit, or refuses.
func (b *bucket) take(now time.Time) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.l.AllowN(now, 1) {
		return nil
	}
	return b.refusal(now)
}

// full reports whether the bucket holds its whole burst: what a new one
// would hold, so letting it go forgets nothing.
func (b *bucket) full(now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.l.TokensAt(now) >= float64(b.l.Burst())
}

// inDebt refuses when the bucket's tokens are below zero.
func (b *bucket) inDebt(now time.Time) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.owes(now)
}

// owes is inDebt with b.mu held.
func (b *bucket) owes(now time.Time) error {
	if b.l.TokensAt(now) < 0 {
		return b.refusal(now)
	}
	return nil
}

// Spend takes units for work, into debt if need be, unless the caller is
// in debt already: concurrent requests of one caller each see what the
// others spent.
func (b *bucket) Spend(work access.Work, units int) error {
	return b.spend(time.Now(), work, units, true)
}

// Charge takes units for work, into debt if need be, whatever the caller
// owes already.
func (b *bucket) Charge(work access.Work, units int) {
	_ = b.spend(time.Now(), work, units, false) // never refuses
}

func (b *bucket) spend(now time.Time, work access.Work, units int, refuse bool) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if refuse {
		if err := b.owes(now); err != nil {
			b.count(work, 0, err)
			return err
		}
	}
	b.count(work, units, nil)
	// A reservation is at most a burst; never waited for, each one is debt.
	for units > 0 {
		n := min(units, b.l.Burst())
		b.l.ReserveN(now, n)
		units -= n
	}
	return nil
}

// count adds units spent on work, or a refusal, to the metrics. The
// label is one of workRequest and access.Works, never a caller's words.
func (b *bucket) count(work access.Work, units int, refused error) {
	switch {
	case b.m == nil:
	case refused != nil:
		b.m.refused[work].Inc()
	default:
		b.m.spent[work].Add(float64(units))
	}
}

// refusal says when the bucket will hold a unit again.
func (b *bucket) refusal(now time.Time) error {
	rps := float64(b.l.Limit())
	wait := min((1-b.l.TokensAt(now))/rps, 1e9) // seconds; a Duration holds 292 years
	return &access.OverBudgetError{RetryAfter: time.Duration(wait * float64(time.Second)), Rate: rps, Burst: b.l.Burst(), Site: b.site, Crowded: b.crowded}
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
// (or Forwarded's for=) names last that is not a trusted proxy itself:
// each proxy appends the address it heard from, so the entries left of
// the last untrusted one are whatever the client chose to send. From
// anyone else the header is ignored.
func clientHost(r *http.Request, p proxies) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	ip = ip.Unmap().WithZone("")
	switch {
	case !isTrusted(ip, p.trusted):
	case p.rfc7239:
		ip = forwardedFor(r.Header.Values("Forwarded"), ip, p.trusted, forwardedNode)
	default:
		ip = forwardedFor(r.Header.Values("X-Forwarded-For"), ip, p.trusted, forwardedAddr)
	}
	if ip.Is4() {
		return ip.String()
	}
	return clientKey(ip, p.assigned).String()
}

// proxies are the proxies in front of the service that are believed,
// and whether they name whom they heard from in Forwarded (RFC 7239)
// rather than X-Forwarded-For. Only one header can be: a proxy that
// writes one passes the other on as the client sent it.
type proxies struct {
	trusted []netip.Prefix
	rfc7239 bool
	// assigned are the IPv6 networks whose addresses are each a client
	// (clientKey), the address a proxy names included.
	assigned []netip.Prefix
}

// maxForwarded bounds the entries read, from the right: more proxies
// than this in front of one service is a header made up.
const maxForwarded = 16

// forwardedFor is the address the values of a forwarding header name
// last that is not trusted, or, when every one is, the first of them;
// from, the trusted proxy's own, when an entry does not parse (addr
// reads one entry).
func forwardedFor(values []string, from netip.Addr, trusted []netip.Prefix, addr func(string) (netip.Addr, error)) netip.Addr {
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
			ip, err := addr(strings.TrimSpace(entry))
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

// forwardedNode reads the for= node of one element of a Forwarded header
// (for=192.0.2.60;proto=http, for="[2001:db8:cafe::17]:4711"). An element
// without one, or naming a node as unknown or obfuscated (for=_hidden),
// names no address: the chain is then not read past it.
func forwardedNode(element string) (netip.Addr, error) {
	for pair := range strings.SplitSeq(element, ";") {
		name, node, ok := strings.Cut(strings.TrimSpace(pair), "=")
		if !ok || !strings.EqualFold(name, "for") {
			continue
		}
		// A node is a token or a quoted-string; none needs an escape.
		if len(node) >= 2 && node[0] == '"' && node[len(node)-1] == '"' {
			node = node[1 : len(node)-1]
		}
		if len(node) >= 2 && node[0] == '[' && node[len(node)-1] == ']' {
			node = node[1 : len(node)-1] // IPv6 without a port
		}
		return forwardedAddr(node)
	}
	return netip.Addr{}, errNoNode
}

var errNoNode = errors.New("no for= node")

func isTrusted(ip netip.Addr, trusted []netip.Prefix) bool {
	for _, p := range trusted {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}
