package httpapi

import (
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// LimitHandshakes bounds the TLS connections each client address may open
// on ln: a burst of burst, then rate a second, an IPv6 address by its
// /64 and its /48 sixteen times that, as anonymous callers' budgets are
// (throttle). A connection past it is closed at accept, before anything
// is read from it. Without this, a client that replayed one recorded
// ClientHello on new connections made the server sign a handshake for
// each: 1.3 ms of CPU with an RSA-2048 certificate against the client's
// 0.12, so that one address kept both cores busy (RELIABILITY.md). The
// addresses in trusted (auth.trusted_proxies) are not limited: a proxy
// speaks for many clients. rate <= 0 returns ln as it is.
//
// Wrap the listener itself, inside any bound on connections, so that a
// refusal costs an accept and a close, whatever that bound holds.
func LimitHandshakes(ln net.Listener, rate float64, burst int, trusted []netip.Prefix, logger *slog.Logger, reg prometheus.Registerer) net.Listener {
	if rate <= 0 {
		return ln
	}
	burst = max(burst, 1)
	refused := prometheus.NewCounter(prometheus.CounterOpts{Name: "toolsearch_http_tls_connections_refused_total",
		Help: "TLS connections to the API closed at accept, unread, because their client address (an IPv6 one's /64, or its /48) was over limits.tls_handshake_rate."})
	if reg != nil {
		reg.MustRegister(refused)
	}
	return &handshakeListener{
		Listener: ln,
		addrs: newBuckets[netip.Prefix](maxAnonymousBuckets, func(shared bool) *bucket {
			if shared {
				return newBucket(rate*siteShare, burst*siteShare, nil)
			}
			return newBucket(rate, burst, nil)
		}),
		sites: newBuckets[netip.Prefix](maxAnonymousBuckets, func(bool) *bucket {
			return newBucket(rate*siteShare, burst*siteShare, nil)
		}),
		trusted: trusted,
		refused: refused,
		logger:  logger,
		lines: newLineBudget("refused TLS connections not logged",
			fmt.Sprintf("past %d lines a second; toolsearch_http_tls_connections_refused_total counts every one", refusalLinesRate)),
		now: time.Now,
	}
}

type handshakeListener struct {
	net.Listener
	mu      sync.Mutex // serialises the tables' look-ups and additions
	addrs   *buckets[netip.Prefix]
	sites   *buckets[netip.Prefix] // IPv6 /48s
	trusted []netip.Prefix
	refused prometheus.Counter
	logger  *slog.Logger
	lines   *lineBudget
	now     func() time.Time // time.Now; a test's clock
}

// Accept returns the next connection whose address has a handshake left,
// closing the others.
func (l *handshakeListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		client, ok := l.admit(c.RemoteAddr())
		if ok {
			return c, nil
		}
		if tc, ok := c.(*net.TCPConn); ok {
			// A reset, not a close: the server keeps no TIME_WAIT socket
			// for each connection of a flood, and the client is told at once.
			_ = tc.SetLinger(0)
		}
		c.Close()
		l.refused.Inc()
		if now := l.now(); l.lines.admit(now) {
			l.lines.summarise(l.logger, l.now)
			l.logger.Warn("TLS connection refused: its client address opened more than limits.tls_handshake_rate allows", "client", client)
		}
	}
}

// admit takes a handshake from the budget of addr's client, named as
// clientHost names it, and reports whether there was one. Only a TCP
// listener's connections are limited.
func (l *handshakeListener) admit(addr net.Addr) (string, bool) {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok {
		return addr.String(), true
	}
	ip := tcp.AddrPort().Addr().Unmap().WithZone("")
	if isTrusted(ip, l.trusted) {
		return ip.String(), true
	}
	key := netip.PrefixFrom(ip, ip.BitLen())
	if ip.Is6() {
		key, _ = ip.Prefix(64)
	}
	now := l.now()
	l.mu.Lock()
	b := l.addrs.get(key, now)
	var site *bucket
	if ip.Is6() {
		s, _ := ip.Prefix(48)
		site = l.sites.get(s, now)
	}
	l.mu.Unlock()
	client := key.String()
	if ip.Is4() {
		client = ip.String()
	}
	return client, b.admitWith(site, now) == nil
}
