package httpapi

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// connsFrom is a listener whose connections come from the addresses
// queued, then an error.
type connsFrom struct {
	addrs []string
	net.Listener
}

var errNoMore = errors.New("no more connections")

func (l *connsFrom) Accept() (net.Conn, error) {
	if len(l.addrs) == 0 {
		return nil, errNoMore
	}
	a := netip.MustParseAddrPort(l.addrs[0])
	l.addrs = l.addrs[1:]
	c, other := net.Pipe()
	other.Close()
	return fromAddr{c, net.TCPAddrFromAddrPort(a)}, nil
}

type fromAddr struct {
	net.Conn
	remote *net.TCPAddr
}

func (c fromAddr) RemoteAddr() net.Addr { return c.remote }

// TestLimitClients sends connections through the listener in steps of a
// fake clock and checks which of them it hands on.
func TestLimitClients(t *testing.T) {
	// times repeats an address n times.
	times := func(addr string, n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = addr
		}
		return out
	}
	// each64 is one address in each of n /64s of one /48.
	each64 := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("[2001:db8:1:%x::1]:443", i)
		}
		return out
	}
	// distinct is one connection from each of n IPv4 addresses.
	distinct := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("10.%d.%d.%d:1", i>>16&255, i>>8&255, i&255)
		}
		return out
	}
	type step struct {
		after time.Duration // since the step before
		from  []string
		want  int  // connections handed on
		keep  bool // the connections handed on stay open, else they close at once
		// closes, before the step, the first this many connections kept
		// open, each twice.
		closeKept int
	}
	handshakes := ClientLimits{HandshakeRate: 1, HandshakeBurst: 3}
	conns := ClientLimits{Connections: 2}
	// A cluster's pod range, each64's /48: each address a client.
	assigned := []netip.Prefix{netip.MustParsePrefix("2001:db8:1::/48")}
	tests := []struct {
		name    string
		limits  ClientLimits
		trusted []string
		steps   []step
		refused map[string]int
	}{
		{"an address's handshake burst, then its rate", handshakes, nil, []step{
			{0, times("192.0.2.1:1000", 5), 3, false, 0},
			{time.Second, times("192.0.2.1:1001", 3), 1, false, 0},
			{10 * time.Second, times("192.0.2.1:1002", 5), 3, false, 0}, // refilled to its burst, no more
		}, map[string]int{refusedHandshakes: 6}},
		{"each address its own handshakes", handshakes, nil, []step{
			{0, append(times("192.0.2.1:1", 4), times("192.0.2.2:1", 4)...), 6, false, 0},
		}, map[string]int{refusedHandshakes: 2}},
		{"an IPv4-mapped address is the IPv4 one", handshakes, nil, []step{
			{0, append(times("192.0.2.1:1", 2), times("[::ffff:192.0.2.1]:1", 2)...), 3, false, 0},
		}, map[string]int{refusedHandshakes: 1}},
		{"an IPv6 /64 is one client", handshakes, nil, []step{
			{0, []string{"[2001:db8::1]:1", "[2001:db8::2]:1", "[2001:db8::3]:1", "[2001:db8::4]:1", "[2001:db8:0:1::1]:1"}, 4, false, 0},
		}, map[string]int{refusedHandshakes: 1}},
		{"the /64s of a /48 share sixteen handshake budgets", handshakes, nil, []step{
			// Each /64 has a burst of 3, the /48 48.
			{0, each64(20), 20, false, 0},
			{0, each64(20), 20, false, 0},
			{0, each64(20), 8, false, 0},
			{time.Second, each64(20), 16, false, 0}, // the /48's 16 a second
		}, map[string]int{refusedHandshakes: 16}},
		{"past the table's addresses, newcomers share sixteen handshake budgets", handshakes, nil, []step{
			// None of the table's buckets is full again, so none is let go.
			{0, distinct(maxAnonymousBuckets + 100), maxAnonymousBuckets + 3*siteShare, false, 0},
		}, map[string]int{refusedHandshakes: 100 - 3*siteShare}},
		{"an address's open connections", conns, nil, []step{
			{0, times("192.0.2.1:1", 3), 2, true, 0},
			{time.Hour, times("192.0.2.1:2", 1), 0, true, 0}, // time gives none back
			{0, times("192.0.2.2:1", 3), 2, true, 0},         // another's are its own
		}, map[string]int{refusedConnections: 3}},
		{"a closed connection gives its place back", conns, nil, []step{
			{0, times("192.0.2.1:1", 5), 5, false, 0},
			{0, times("192.0.2.1:1", 3), 2, true, 0},
		}, map[string]int{refusedConnections: 1}},
		{"an IPv6 /64's connections are one client's", conns, nil, []step{
			{0, []string{"[2001:db8::1]:1", "[2001:db8::2]:1", "[2001:db8::3]:1", "[2001:db8:0:1::1]:1"}, 3, true, 0},
		}, map[string]int{refusedConnections: 1}},
		{"a connection closed twice gives its place back once", conns, nil, []step{
			{0, times("192.0.2.1:1", 2), 2, true, 0},
			{0, times("192.0.2.1:1", 2), 1, true, 1},
		}, map[string]int{refusedConnections: 1}},
		{"a connection refused for the connections takes no handshake", ClientLimits{Connections: 1, HandshakeRate: 1e-9, HandshakeBurst: 2}, nil, []step{
			{0, times("192.0.2.1:1", 4), 1, true, 0},
			{0, times("192.0.2.1:1", 2), 1, true, 1}, // the burst's second
			{0, times("192.0.2.1:1", 1), 0, true, 1}, // none left
		}, map[string]int{refusedConnections: 4, refusedHandshakes: 1}},
		{"an address of an assigned network is a client of its own", ClientLimits{HandshakeRate: 1, HandshakeBurst: 3, Assigned: assigned}, nil, []step{
			{0, append(times("[2001:db8:1::1]:1", 4), times("[2001:db8:1::2]:1", 4)...), 6, false, 0},
			// Outside it, two addresses of one /64 are still one client.
			{0, append(times("[2001:db8:2::1]:1", 2), times("[2001:db8:2::2]:1", 2)...), 3, false, 0},
		}, map[string]int{refusedHandshakes: 3}},
		{"an assigned network is no site", ClientLimits{HandshakeRate: 1, HandshakeBurst: 3, Assigned: assigned}, nil, []step{
			{0, each64(20), 20, false, 0},
			{0, each64(20), 20, false, 0},
			{0, each64(20), 20, false, 0}, // a /48 of clients would have had 8
		}, nil},
		{"an assigned network's addresses hold their own connections", ClientLimits{Connections: 2, Assigned: assigned}, nil, []step{
			{0, append(times("[2001:db8:1::1]:1", 2), times("[2001:db8:1::2]:1", 3)...), 4, true, 0},
		}, map[string]int{refusedConnections: 1}},
		{"a trusted proxy is not limited", ClientLimits{Connections: 2, HandshakeRate: 1, HandshakeBurst: 3}, []string{"10.0.0.0/8"}, []step{
			{0, append(times("10.1.2.3:1", 50), times("192.0.2.1:1", 5)...), 52, true, 0},
		}, map[string]int{refusedConnections: 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			limits := tt.limits
			for _, p := range tt.trusted {
				limits.Trusted = append(limits.Trusted, netip.MustParsePrefix(p))
			}
			var logs bytes.Buffer
			reg := prometheus.NewRegistry()
			src := &connsFrom{}
			limits.Listener = "api"
			ln := LimitClients(src, limits, NewRefusedConnections(reg), slog.New(slog.NewTextHandler(&logs, nil))).(*clientListener)
			now := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
			ln.now = func() time.Time { return now }
			var kept []net.Conn
			for i, s := range tt.steps {
				for _, c := range kept[:s.closeKept] {
					c.Close()
					c.Close() // gives nothing back twice
				}
				kept = kept[s.closeKept:]
				now = now.Add(s.after)
				src.addrs = append(src.addrs, s.from...)
				got := 0
				for {
					c, err := ln.Accept()
					if errors.Is(err, errNoMore) {
						break
					}
					if err != nil {
						t.Fatal(err)
					}
					if s.keep {
						kept = append(kept, c)
					} else {
						c.Close()
					}
					got++
				}
				if got != s.want {
					t.Errorf("step %d: %d connections handed on of %d, want %d", i, got, len(s.from), s.want)
				}
			}
			lines := 0
			for _, reason := range []string{refusedConnections, refusedHandshakes} {
				series := `toolsearch_http_connections_refused_total{listener="api",reason="` + reason + `"}`
				if n := gathered(t, reg, series); int(n) != tt.refused[reason] {
					t.Errorf("%s = %v, want %d", series, n, tt.refused[reason])
				}
				lines += tt.refused[reason]
			}
			if n := strings.Count(logs.String(), "connection refused"); n != lines {
				t.Errorf("%d lines logged for %d refusals:\n%s", n, lines, logs.String())
			}
			for _, c := range kept {
				c.Close()
			}
			if len(ln.open) != 0 {
				t.Errorf("with every connection closed, the table still holds %v", ln.open)
			}
		})
	}
}

// TestLimitClientsOff: no limits leave the listener as it is.
func TestLimitClientsOff(t *testing.T) {
	src := &connsFrom{}
	reg := prometheus.NewRegistry()
	if ln := LimitClients(src, ClientLimits{HandshakeBurst: 100}, NewRefusedConnections(reg), slog.Default()); ln != src {
		t.Errorf("no limits wrapped the listener in %T", ln)
	}
}
