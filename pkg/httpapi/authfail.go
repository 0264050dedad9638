package httpapi

import (
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// What one client address may get wrong when it presents an API key or
// the admin token: a burst of authFailBurst, then one every
// authFailEvery. Without a bound, a key or the token could be guessed at
// the service's whole request rate (some 40,000 a second on this
// machine); with it, an address gets 86,400 guesses a day, and a
// rotation through more addresses than the table keeps shares one
// allowance (see buckets). Clients behind one address share it: a client
// with a stale key that retries every second or slower never uses it
// up, and a proxy in front should be named in auth.trusted_proxies.
const (
	authFailBurst = 60
	authFailEvery = time.Second
)

// authFailures counts, per client address (an IPv6 one's /64), the
// credentials presented that matched nothing. An address out of
// allowance is refused before any credential of its is checked, so a
// right guess cannot be told from a wrong one; a request without a
// credential, or with one that matches, costs nothing, so a client that
// authenticates is never slowed.
type authFailures struct {
	mu      sync.Mutex
	table   *buckets[string]
	failed  prometheus.Counter
	refused prometheus.Counter
	now     func() time.Time // time.Now; a test's clock
}

func newAuthFailures(reg prometheus.Registerer) *authFailures {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "toolsearch_auth_failures_total", Help: "Credentials presented that matched no API key or admin token (failed), and requests refused 429 for a client address out of its allowance of failures (refused).",
	}, []string{"outcome"})
	if reg != nil {
		reg.MustRegister(c)
	}
	rate := 1 / authFailEvery.Seconds()
	return &authFailures{
		table: newBuckets[string](maxAnonymousBuckets, func(shared bool) *bucket {
			if shared {
				return newBucket(rate*siteShare, authFailBurst*siteShare, nil)
			}
			return newBucket(rate, authFailBurst, nil)
		}),
		failed: c.WithLabelValues("failed"), refused: c.WithLabelValues("refused"), now: time.Now,
	}
}

// guard is where every credential is looked at first: the address of a
// request that bears one (token, "" for none), and the refusal when that
// address has no failure left to make. A request without a credential
// has nothing to guard, and no address is worked out for it.
func (a *authFailures) guard(r *http.Request, trusted proxies) (token, addr string, err *apiError) {
	if token = bearer(r); token == "" {
		return "", "", nil
	}
	addr = clientHost(r, trusted)
	return token, addr, a.admit(addr)
}

// admit refuses a request from addr, before its credential is checked,
// when addr has no failure left to make.
func (a *authFailures) admit(addr string) *apiError {
	now := a.now()
	a.mu.Lock()
	b := a.table.peek(addr, now)
	a.mu.Unlock()
	if b == nil {
		return nil
	}
	b.mu.Lock()
	tokens, rate := b.l.TokensAt(now), float64(b.l.Limit())
	b.mu.Unlock()
	if tokens >= 1 {
		return nil
	}
	a.refused.Inc()
	wait := max(1, int((1-tokens)/rate+0.999))
	e := errorf(http.StatusTooManyRequests, "too_many_failed_attempts", "too many credentials from this address matched nothing; retry after %d s", wait)
	e.RetryAfter = wait
	return e
}

// fail counts a credential from addr that matched nothing.
func (a *authFailures) fail(addr string) {
	now := a.now()
	a.failed.Inc()
	a.mu.Lock()
	b := a.table.get(addr, now)
	a.mu.Unlock()
	b.mu.Lock()
	b.l.AllowN(now, 1)
	b.mu.Unlock()
}
