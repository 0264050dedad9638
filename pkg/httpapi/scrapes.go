package httpapi

import (
	"errors"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/toolsearch/toolsearch/pkg/access"
)

// What one client address may scrape of /metrics: a burst of scrapeBurst,
// then scrapeRate a second. Rendering the service's series (some 20 KB)
// costs about a millisecond of CPU, and the NetworkPolicy lets any pod
// reach the metrics port: one client scraping as fast as it was answered
// kept 0.45 of a core busy. Prometheus scrapes every 15 to 30 s, each of
// its replicas from its own address.
const (
	scrapeRate  = 2
	scrapeBurst = 10
)

// limitScrapes answers 429 rate_limited, with Retry-After, to a client
// address past its scrapes; a loopback address is not limited. The
// metrics listener has no proxy in front: the address is the
// connection's.
func limitScrapes(now func() time.Time) func(http.Handler) http.Handler {
	var mu sync.Mutex
	table := newBuckets[netip.Prefix](maxAnonymousBuckets, func(shared bool) *bucket {
		if shared {
			return newBucket(scrapeRate*siteShare, scrapeBurst*siteShare, nil)
		}
		return newBucket(scrapeRate, scrapeBurst, nil)
	})
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ap, err := netip.ParseAddrPort(r.RemoteAddr)
			ip := ap.Addr().Unmap().WithZone("")
			if err != nil || ip.IsLoopback() {
				// Not TCP (a test's), or the pod itself: whatever runs
				// in it, and the tools that poll a local server's series.
				next.ServeHTTP(w, r)
				return
			}
			t := now()
			mu.Lock()
			// By /64 whatever auth.assigned_networks says: a /64's budget is
			// thirty times what a Prometheus scraping every 15 s needs.
			b := table.get(clientKey(ip, nil), t)
			mu.Unlock()
			var over *access.OverBudgetError
			if errors.As(b.take(t), &over) {
				e := errorf(http.StatusTooManyRequests, "rate_limited", "more than %d scrapes a second (bursts of %d) from this address; retry after %d s", scrapeRate, scrapeBurst, over.RetrySeconds())
				e.RetryAfter = over.RetrySeconds()
				writeError(w, r, nil, e)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}
