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

// TestLimitHandshakes sends connections through the listener in steps of
// a fake clock and checks which of them it hands on.
func TestLimitHandshakes(t *testing.T) {
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
		want  int // connections handed on
	}
	tests := []struct {
		name    string
		trusted []string
		steps   []step
	}{
		{"an address's burst, then its rate", nil, []step{
			{0, times("192.0.2.1:1000", 5), 3},
			{time.Second, times("192.0.2.1:1001", 3), 1},
			{10 * time.Second, times("192.0.2.1:1002", 5), 3}, // refilled to its burst, no more
		}},
		{"each address its own", nil, []step{
			{0, append(times("192.0.2.1:1", 4), times("192.0.2.2:1", 4)...), 6},
		}},
		{"an IPv4-mapped address is the IPv4 one", nil, []step{
			{0, append(times("192.0.2.1:1", 2), times("[::ffff:192.0.2.1]:1", 2)...), 3},
		}},
		{"an IPv6 /64 is one client", nil, []step{
			{0, []string{"[2001:db8::1]:1", "[2001:db8::2]:1", "[2001:db8::3]:1", "[2001:db8::4]:1", "[2001:db8:0:1::1]:1"}, 4},
		}},
		{"the /64s of a /48 share sixteen budgets", nil, []step{
			// Each /64 has a burst of 3, the /48 48.
			{0, each64(20), 20},
			{0, each64(20), 20},
			{0, each64(20), 8},
			{time.Second, each64(20), 16}, // the /48's 16 a second
		}},
		{"past the table's addresses, newcomers share sixteen budgets", nil, []step{
			// None of the table's buckets is full again, so none is let go.
			{0, distinct(maxAnonymousBuckets + 100), maxAnonymousBuckets + 3*siteShare},
		}},
		{"a trusted proxy is not limited", []string{"10.0.0.0/8"}, []step{
			{0, append(times("10.1.2.3:1", 50), times("192.0.2.1:1", 5)...), 53},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var trusted []netip.Prefix
			for _, p := range tt.trusted {
				trusted = append(trusted, netip.MustParsePrefix(p))
			}
			var logs bytes.Buffer
			reg := prometheus.NewRegistry()
			src := &connsFrom{}
			ln := LimitHandshakes(src, 1, 3, trusted, slog.New(slog.NewTextHandler(&logs, nil)), reg).(*handshakeListener)
			now := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
			ln.now = func() time.Time { return now }
			refused := 0
			for i, s := range tt.steps {
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
					c.Close()
					got++
				}
				if got != s.want {
					t.Errorf("step %d: %d connections handed on of %d, want %d", i, got, len(s.from), s.want)
				}
				refused += len(s.from) - got
			}
			if n := gathered(t, reg, "toolsearch_http_tls_connections_refused_total"); int(n) != refused {
				t.Errorf("toolsearch_http_tls_connections_refused_total = %v, want %d", n, refused)
			}
			if lines := strings.Count(logs.String(), "TLS connection refused"); lines != refused {
				t.Errorf("%d lines logged for %d refusals:\n%s", lines, refused, logs.String())
			}
		})
	}
}

// TestLimitHandshakesOff: a rate of 0 (limits.tls_handshake_rate: -1)
// leaves the listener as it is, with no metric.
func TestLimitHandshakesOff(t *testing.T) {
	src := &connsFrom{}
	reg := prometheus.NewRegistry()
	if ln := LimitHandshakes(src, 0, 100, nil, slog.Default(), reg); ln != src {
		t.Errorf("rate 0 wrapped the listener in %T", ln)
	}
	if mfs, _ := reg.Gather(); len(mfs) != 0 {
		t.Errorf("rate 0 registered %d metrics", len(mfs))
	}
}
