package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolsearch/toolsearch/cmd/internal/serveproc"
)

// connectionHog measures one address holding as many connections as it
// can: from 127.0.0.1, n connections each send a request's first line and
// never finish their headers, and are opened again as the server closes
// them (its 5 s header timeout), a second after a reset, while a client at 127.0.0.2 searches
// over a new connection 20 times a second, first for 3 seconds without
// the hog, then for dur with it.
func connectionHog(ctx context.Context, srv *serveproc.Server, n int, dur time.Duration, stdout io.Writer) error {
	base, addr := srv.Base, srv.Addr
	other := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		DisableKeepAlives: true,
		DialContext:       (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}).DialContext,
	}}
	quiet, err := paced(ctx, other, base, 3*time.Second)
	if err != nil {
		return err
	}
	var held, opened, refused atomic.Int64
	hctx, cancel := context.WithTimeout(ctx, dur)
	defer cancel()
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}}
			buf := make([]byte, 1)
			for hctx.Err() == nil {
				c, err := d.DialContext(hctx, "tcp", addr)
				if err != nil {
					time.Sleep(10 * time.Millisecond)
					continue
				}
				opened.Add(1)
				held.Add(1)
				fmt.Fprintf(c, "POST /mcp/tool-search HTTP/1.1\r\nHost: %s\r\n", addr)
				stop := context.AfterFunc(hctx, func() { c.Close() })
				start := time.Now()
				_, err = c.Read(buf) // until the server closes it, or the hog ends
				stop()
				c.Close()
				held.Add(-1)
				if err != nil && time.Since(start) < 100*time.Millisecond && hctx.Err() == nil {
					// Reset at accept. A client that leaks connections
					// tries again later, not in a loop as fast as the
					// server resets it: that would be a flood of connects,
					// which costs the flooder what it costs the server.
					refused.Add(1)
					select {
					case <-hctx.Done():
					case <-time.After(time.Second):
					}
				}
			}
		})
	}
	time.Sleep(time.Second) // the hog takes what it can
	most := held.Load()
	during, err := paced(ctx, other, base, dur-time.Second)
	cancel()
	wg.Wait()
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "hog: %d connections from 127.0.0.1 for %s, %d opened, %d reset at once, %d open a second in\n",
		n, dur, opened.Load(), refused.Load(), most)
	fmt.Fprintf(stdout, "a client at 127.0.0.2, a new connection for each search, 20 a second: p50 %s without the hog, %s with it; p99 %s, %s; failed %d of %d, %d of %d (2 s timeout)\n",
		ms(quiet.p(50)), ms(during.p(50)), ms(quiet.p(99)), ms(during.p(99)),
		quiet.failed, quiet.failed+len(quiet.times), during.failed, during.failed+len(during.times))
	return nil
}
