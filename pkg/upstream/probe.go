package upstream

import (
	"context"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/toolsearch/toolsearch/pkg/internal/endpoint"
)

// maxProbeGap is the longest a failing upstream waits to be listed again.
// One that refuses toolsearch (its credentials, a wrong path) was asked
// twice a second for as long as it refused, each request a refused login
// in its logs and its rate limits; one that is down is asked once a second
// still, since a connection refused costs it nothing and it serves again
// within a second of coming back.
const maxProbeGap = time.Minute

// lastAnswer is the HTTP status of the latest POST an operation sent, 0
// when it got none (the request failed in transport), and the wait the
// answer asked for (Retry-After).
type lastAnswer struct {
	mu     sync.Mutex
	status int
	wait   time.Duration
}

type lastAnswerKey struct{}

// withLastAnswer has the POSTs sent under ctx noted in a.
func withLastAnswer(ctx context.Context, a *lastAnswer) context.Context {
	return context.WithValue(ctx, lastAnswerKey{}, a)
}

// noteAnswer notes a POST's outcome under ctx: resp is nil when there was
// no answer.
func noteAnswer(ctx context.Context, resp *http.Response) {
	a, ok := ctx.Value(lastAnswerKey{}).(*lastAnswer)
	if !ok {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.status, a.wait = 0, 0
	if resp != nil {
		a.status, a.wait = resp.StatusCode, endpoint.RetryAfter(resp.Header, time.Now())
	}
}

func (a *lastAnswer) get() (status int, wait time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.status, a.wait
}

// refuses reports whether status says the upstream will answer the same
// until someone changes something: a 4xx (credentials refused, no such
// endpoint, a method or protocol version it does not take, too many
// requests), but for a request timeout (408) and Too Early (425), which
// pass by themselves.
func refuses(status int) bool {
	return status >= 400 && status < 500 && status != http.StatusRequestTimeout && status != http.StatusTooEarly
}

// prober paces a failing upstream's listings. Only the upstream's loop
// uses it.
type prober struct {
	first, most time.Duration
	refusal     time.Duration // the longest gap after a refusal this episode; 0 before the first
	jitter      func(d time.Duration) time.Duration
}

func newProber(first, most time.Duration) *prober {
	return &prober{first: first, most: max(first, most), jitter: halfJitter}
}

// halfJitter is a duration in [d/2, d]: replicas started together, each
// refused alike, spread their retries instead of arriving as one.
func halfJitter(d time.Duration) time.Duration {
	return d/2 + rand.N(d/2+1)
}

// failed is how long to wait after a listing failed, its last answer
// status (0: none) asking for wait. A refusal doubles the gap each time,
// up to most; a wait the upstream asked for is kept, within first and
// most; anything else (no answer, a server error) waits first.
func (p *prober) failed(status int, wait time.Duration) (gap time.Duration, refused bool) {
	gap = p.first
	if refuses(status) {
		p.refusal = min(max(2*p.refusal, p.first), p.most)
		gap, refused = p.jitter(p.refusal), true
	}
	return min(max(gap, wait), p.most), refused
}

// succeeded ends a failing episode: the next refusal starts at first.
func (p *prober) succeeded() { p.refusal = 0 }
