package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/toolsearch/toolsearch/cmd/internal/serveproc"
)

// openRoutes are the requests no caller's budget pays for: routes that
// take no key, a path no route takes, a keyed route asked without a key.
var openRoutes = []struct{ method, path string }{
	{http.MethodGet, "/mcp/tool-search/status"},
	{http.MethodGet, "/healthz"},
	{http.MethodGet, "/no-such-route"},
	{http.MethodPost, "/mcp/tool-search"}, // no key: 401, or 429 past the budget
}

// openFlood measures one address asking the requests no key pays for as
// fast as it is answered: flooders at 127.0.0.1 on connections they keep,
// while a client at 127.0.0.2 searches with its key on a connection it
// keeps, 20 times a second, first for 3 seconds without the flood, then
// for dur with it.
func openFlood(ctx context.Context, srv *serveproc.Server, flooders int, dur time.Duration, stdout io.Writer) error {
	from := func(ip net.IP) *http.Client {
		return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
			MaxIdleConnsPerHost: 1,
			DialContext:         (&net.Dialer{LocalAddr: &net.TCPAddr{IP: ip}}).DialContext,
		}}
	}
	other := from(net.IPv4(127, 0, 0, 2))
	quiet, err := paced(ctx, other, srv.Base, 3*time.Second)
	if err != nil {
		return err
	}
	var answered, refused, failed, next atomic.Int64
	during, serverCPU, err := whileFlooding(ctx, srv, other, dur, flooders, func(fctx context.Context) {
		c := from(net.IPv4(127, 0, 0, 1))
		for fctx.Err() == nil {
			r := openRoutes[int(next.Add(1))%len(openRoutes)]
			body := ""
			if r.method == http.MethodPost {
				body = `{"query":"x"}`
			}
			switch code, _ := do(fctx, c, r.method, srv.Base+r.path, "", body, nil); {
			case code == http.StatusTooManyRequests:
				refused.Add(1)
			case code == 0:
				failed.Add(1)
			default:
				answered.Add(1)
			}
		}
	})
	if err != nil {
		return err
	}
	n := answered.Load() + refused.Load()
	fmt.Fprintf(stdout, "open flood: %d flooders at 127.0.0.1 for %s, %d requests (%.0f a second): %d answered, %d refused 429, %d failed\n",
		flooders, dur, n, float64(n)/dur.Seconds(), answered.Load(), refused.Load(), failed.Load())
	fmt.Fprintf(stdout, "CPU: the server %.2f s (%.2f cores)\n", serverCPU.Seconds(), serverCPU.Seconds()/dur.Seconds())
	fmt.Fprintf(stdout, "a client at 127.0.0.2, searches with its key on a kept connection, 20 a second: p50 %s without the flood, %s in it (%.1fx); p99 %s, %s; failed %d, %d\n",
		ms(quiet.p(50)), ms(during.p(50)), float64(during.p(50))/float64(quiet.p(50)), ms(quiet.p(99)), ms(during.p(99)), quiet.failed, during.failed)
	return nil
}
