package httpapi

import (
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// ClientLimits are what one client address (an IPv6 one's /64) may open
// on a listener. The addresses in Trusted (auth.trusted_proxies) are not
// limited: a proxy speaks for many clients.
type ClientLimits struct {
	// Listener names the listener, "api" or "metrics", in the refusals'
	// metric and log lines.
	Listener string
	// Connections is how many connections an address may hold open at
	// once; 0: no limit. Without it one client holding the listener's
	// whole bound (a connection leak, slow bodies) kept every other
	// caller waiting in the kernel's queue.
	Connections int
	// HandshakeRate and HandshakeBurst bound the new connections an
	// address opens when the API serves TLS, an IPv6 /48's /64s sixteen
	// addresses' worth together, as anonymous callers' budgets are
	// (throttle); HandshakeRate 0: no limit. A client that replayed one
	// recorded ClientHello on new connections made the server sign a
	// handshake for each: 1.4 ms of CPU with an RSA-2048 certificate
	// against the client's 0.15, so that one address kept 1.8 of two
	// cores busy (RELIABILITY.md).
	HandshakeRate  float64
	HandshakeBurst int
	Trusted        []netip.Prefix
	// Assigned are the IPv6 networks whose addresses are each a client
	// (auth.assigned_networks; see clientKey).
	Assigned []netip.Prefix
}

// The reasons a connection is refused, the values of
// toolsearch_http_connections_refused_total's reason label.
const (
	refusedConnections = "connections"
	refusedHandshakes  = "handshake_rate"
)

// NewRefusedConnections is the counter of the connections LimitClients
// refuses, by listener and reason, registered with reg (when not nil):
// one for every listener.
func NewRefusedConnections(reg prometheus.Registerer) *prometheus.CounterVec {
	refused := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "toolsearch_http_connections_refused_total",
		Help: "Connections reset as they were accepted, unread, by listener (api, metrics): their client address (an IPv6 one's /64) held as many as it may (connections: limits.max_connections_per_address on the API's), or opened more TLS connections than limits.tls_handshake_rate allows (handshake_rate)."},
		[]string{"listener", "reason"})
	if reg != nil {
		reg.MustRegister(refused)
	}
	return refused
}

// LimitClients returns ln with each connection past its address's limits
// closed at accept, before anything is read from it, and counted in
// refused (NewRefusedConnections): a refusal costs an accept and a reset.
// Wrap the listener itself, inside any bound on connections, so that it
// refuses whatever that bound holds. Limits of zero return ln as it is.
func LimitClients(ln net.Listener, l ClientLimits, refused *prometheus.CounterVec, logger *slog.Logger) net.Listener {
	if l.Connections <= 0 && l.HandshakeRate <= 0 {
		return ln
	}
	c := &clientListener{
		Listener: ln,
		limits:   l,
		open:     map[netip.Prefix]int{},
		refused:  map[string]prometheus.Counter{},
		logger:   logger,
		lines: newLineBudget("refused connections not logged",
			fmt.Sprintf("past %d lines a second; toolsearch_http_connections_refused_total counts every one", refusalLinesRate)),
		now: time.Now,
	}
	// A series for each limit the listener has, from 0.
	if l.Connections > 0 {
		c.refused[refusedConnections] = refused.WithLabelValues(l.Listener, refusedConnections)
	}
	if rate, burst := l.HandshakeRate, max(l.HandshakeBurst, 1); rate > 0 {
		c.refused[refusedHandshakes] = refused.WithLabelValues(l.Listener, refusedHandshakes)
		c.handshakes = newBuckets[netip.Prefix](maxAnonymousBuckets, func(shared bool) *bucket {
			if shared {
				return newBucket(rate*siteShare, burst*siteShare, nil)
			}
			return newBucket(rate, burst, nil)
		})
		c.sites = newBuckets[netip.Prefix](maxAnonymousBuckets, func(bool) *bucket {
			return newBucket(rate*siteShare, burst*siteShare, nil)
		})
	}
	return c
}

type clientListener struct {
	net.Listener
	limits ClientLimits
	mu     sync.Mutex // serialises the tables below
	// open counts each address's open connections; an address leaves it
	// with its last, so it holds at most as many as are open.
	open       map[netip.Prefix]int
	handshakes *buckets[netip.Prefix] // nil: no rate
	sites      *buckets[netip.Prefix] // IPv6 /48s
	refused    map[string]prometheus.Counter
	logger     *slog.Logger
	lines      *lineBudget
	now        func() time.Time // time.Now; a test's clock
}

// Accept returns the next connection its address may open, closing the
// others.
func (l *clientListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		key, client, limited := l.client(c.RemoteAddr())
		if !limited {
			return c, nil
		}
		reason := l.admit(key, client)
		if reason == "" {
			return &countedConn{Conn: c, release: func() { l.release(key) }}, nil
		}
		if tc, ok := c.(*net.TCPConn); ok {
			// A reset, not a close: the server keeps no TIME_WAIT socket
			// for each connection of a flood, and the client is told at once.
			_ = tc.SetLinger(0)
		}
		c.Close()
		l.refused[reason].Inc()
		if now := l.now(); l.lines.admit(now) {
			l.lines.summarise(l.logger, l.now)
			if reason == refusedConnections {
				l.logger.Warn("connection refused: its client address holds as many as it may", "listener", l.limits.Listener, "client", client.String(), "limit", l.limits.Connections)
			} else {
				l.logger.Warn("TLS connection refused: its client address opened more than limits.tls_handshake_rate allows", "listener", l.limits.Listener, "client", client.String())
			}
		}
	}
}

// client is addr's key in the tables (an IPv4 address, an IPv6 /64), its
// address, and whether it is limited: only a TCP listener's connections
// from outside the trusted proxies are.
func (l *clientListener) client(addr net.Addr) (netip.Prefix, netip.Addr, bool) {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok {
		return netip.Prefix{}, netip.Addr{}, false
	}
	ip := tcp.AddrPort().Addr().Unmap().WithZone("")
	if isTrusted(ip, l.limits.Trusted) {
		return netip.Prefix{}, ip, false
	}
	return clientKey(ip, l.limits.Assigned), ip, true
}

// clientKey is the client that ip is, as clientHost names it: an IPv4
// address alone; an IPv6 one by its /64, which one client is routed and
// picks addresses in freely, unless a network in assigned holds it (a
// cluster's pods, given one address each): then alone.
func clientKey(ip netip.Addr, assigned []netip.Prefix) netip.Prefix {
	if ip.Is4() {
		return netip.PrefixFrom(ip, 32)
	}
	for _, n := range assigned {
		if n.Contains(ip) {
			return netip.PrefixFrom(ip, 128)
		}
	}
	key, _ := ip.Prefix(64)
	return key
}

// siteOf is the IPv6 site (/48) whose /64s share a budget beside each
// their own, for a client key; none for an IPv4 address or an address
// that is a client alone.
func siteOf(key netip.Prefix) (netip.Prefix, bool) {
	if !key.Addr().Is6() || key.Bits() != 64 {
		return netip.Prefix{}, false
	}
	site, _ := key.Addr().Prefix(48)
	return site, true
}

// admit counts a connection of key's open, and takes a handshake from
// its budget, or says why it may not open one.
func (l *clientListener) admit(key netip.Prefix, ip netip.Addr) string {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := l.limits.Connections; n > 0 && l.open[key] >= n {
		return refusedConnections
	}
	if l.handshakes != nil {
		b := l.handshakes.get(key, now)
		var site *bucket
		if s, ok := siteOf(key); ok {
			site = l.sites.get(s, now)
		}
		// The buckets' locks are taken inside l.mu, never the other way round.
		if b.admitWith(site, now) != nil {
			return refusedHandshakes
		}
	}
	l.open[key]++
	return ""
}

func (l *clientListener) release(key netip.Prefix) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[key]--; l.open[key] <= 0 {
		delete(l.open, key)
	}
}

// countedConn gives its address's place back once, at its first Close.
type countedConn struct {
	net.Conn
	closed  atomic.Bool
	release func()
}

func (c *countedConn) Close() error {
	if c.closed.CompareAndSwap(false, true) {
		c.release()
	}
	return c.Conn.Close()
}
