package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/toolsearch/toolsearch/cmd/internal/serveproc"
)

// handshakeFlood measures what a flood of TLS handshakes from one
// address costs the server and a caller: flooders replay one recorded
// ClientHello on new connections, which costs them a connect and a write
// and the server a key exchange and a signature, while one client
// searches on a connection it keeps, 20 times a second, first for 3
// seconds without the flood, then for dur with it.
func handshakeFlood(ctx context.Context, srv *serveproc.Server, client *http.Client, flooders int, dur time.Duration, stdout io.Writer) error {
	hello, err := clientHello()
	if err != nil {
		return err
	}
	quiet, err := paced(ctx, client, srv.Base, 3*time.Second)
	if err != nil {
		return err
	}
	var answered, refused atomic.Int64
	selfCPU0 := selfCPU()
	during, serverCPU, err := whileFlooding(ctx, srv, client, dur, flooders, func(fctx context.Context) {
		buf := make([]byte, 1)
		var d net.Dialer
		for fctx.Err() == nil {
			c, err := d.DialContext(fctx, "tcp", srv.Addr)
			if err != nil {
				continue
			}
			_ = c.SetDeadline(time.Now().Add(5 * time.Second))
			if _, err := c.Write(hello); err == nil {
				if _, err := c.Read(buf); err == nil {
					answered.Add(1) // the server's flight, signed
				} else {
					refused.Add(1)
				}
			}
			c.Close()
		}
	})
	if err != nil {
		return err
	}
	self := selfCPU() - selfCPU0
	n := answered.Load() + refused.Load()
	fmt.Fprintf(stdout, "flood: %d flooders for %s, %d connections (%.0f a second): %d answered with a signed handshake, %d reset unread\n",
		flooders, dur, n, float64(n)/dur.Seconds(), answered.Load(), refused.Load())
	fmt.Fprintf(stdout, "CPU: the server %.2f s, %.0f µs a connection; this process %.2f s, %.0f µs a connection (the searching client's included)\n",
		serverCPU.Seconds(), perConn(serverCPU, n), self.Seconds(), perConn(self, n))
	fmt.Fprintf(stdout, "one client's searches on a kept connection, 20 a second: p50 %s without the flood, %s in it (%.1fx); p99 %s, %s; failed %d, %d\n",
		ms(quiet.p(50)), ms(during.p(50)), float64(during.p(50))/float64(quiet.p(50)), ms(quiet.p(99)), ms(during.p(99)), quiet.failed, during.failed)
	return nil
}

// whileFlooding runs flood in each of workers goroutines, until its
// context ends dur from now, while client searches as paced does, and
// returns the searches' latencies and the server's CPU over the flood.
func whileFlooding(ctx context.Context, srv *serveproc.Server, client *http.Client, dur time.Duration, workers int, flood func(context.Context)) (latencies, time.Duration, error) {
	cpu0, err := srv.CPU()
	if err != nil {
		return latencies{}, 0, err
	}
	fctx, cancel := context.WithTimeout(ctx, dur)
	defer cancel()
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() { flood(fctx) })
	}
	during, err := paced(ctx, client, srv.Base, dur)
	wg.Wait()
	if err != nil {
		return during, 0, err
	}
	cpu, err := srv.CPU()
	return during, cpu - cpu0, err
}

func perConn(d time.Duration, n int64) float64 {
	if n == 0 {
		return 0
	}
	return float64(d.Microseconds()) / float64(n)
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000) }

// clientHello is the first flight of a TLS client with Go's defaults,
// as it would send it: recorded once, replayed by every flooder.
func clientHello() ([]byte, error) {
	rec := &recorder{wrote: make(chan []byte, 1)}
	c := tls.Client(rec, &tls.Config{ServerName: "localhost", InsecureSkipVerify: true}) // never verifies: it stops at its first write
	go c.Handshake()
	select {
	case b := <-rec.wrote:
		return b, nil
	case <-time.After(5 * time.Second):
		return nil, errors.New("no ClientHello written")
	}
}

// recorder is a connection that hands on the first write and never
// answers.
type recorder struct {
	net.Conn
	wrote chan []byte
	once  sync.Once
}

func (r *recorder) Write(p []byte) (int, error) {
	r.once.Do(func() { r.wrote <- slices.Clone(p) })
	return len(p), nil
}

func (r *recorder) Read([]byte) (int, error) { return 0, io.EOF }
func (r *recorder) Close() error             { return nil }

// latencies are the searches' times, and how many failed.
type latencies struct {
	times  []time.Duration
	failed int
}

func (l latencies) p(q int) time.Duration {
	if len(l.times) == 0 {
		return 0
	}
	s := slices.Clone(l.times)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*q/100)]
}

// paced searches through client 20 times a second for d.
func paced(ctx context.Context, client *http.Client, base string, d time.Duration) (latencies, error) {
	var l latencies
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		select {
		case <-ctx.Done():
			return l, ctx.Err()
		case <-tick.C:
		}
		start := time.Now()
		code, _ := do(ctx, client, http.MethodPost, base+"/mcp/tool-search", "key-hostile", `{"query":"open an issue"}`, nil)
		if code != http.StatusOK {
			l.failed++
			continue
		}
		l.times = append(l.times, time.Since(start))
	}
	return l, nil
}

// selfCPU is this process's CPU time so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
