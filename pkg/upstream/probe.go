package upstream

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"math/rand/v2"
	"mime"
	"net/http"
	"sync"
	"syscall"
	"time"

	"github.com/toolsearch/toolsearch/pkg/internal/endpoint"
	"github.com/toolsearch/toolsearch/pkg/redact"
)

// maxProbeGap is the longest a failing upstream waits to be listed again.
// One that refuses toolsearch (its credentials, a wrong path) was asked
// twice a second for as long as it refused, each request a refused login
// in its logs and its rate limits; one that is down is asked once a second
// still, since a connection refused costs it nothing and it serves again
// within a second of coming back.
const maxProbeGap = time.Minute

// lastAnswer is what the latest POST an operation sent met: the answer's
// status (0: none) and headers, or the error in its place. What it says
// of the upstream is read only when asked (get, callRejected): a call
// that succeeds, the most common, needs none of it.
type lastAnswer struct {
	mu     sync.Mutex
	status int
	header http.Header
	err    error
}

type lastAnswerKey struct{}

// withLastAnswer has the POSTs sent under ctx noted in a.
func withLastAnswer(ctx context.Context, a *lastAnswer) context.Context {
	return context.WithValue(ctx, lastAnswerKey{}, a)
}

// noteAnswer notes a POST's outcome under ctx: its answer, or the error
// that kept it from one.
func noteAnswer(ctx context.Context, resp *http.Response, err error) {
	a, ok := ctx.Value(lastAnswerKey{}).(*lastAnswer)
	if !ok {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.status, a.header, a.err = 0, nil, err
	if resp != nil {
		a.status, a.header = resp.StatusCode, resp.Header
	}
}

// callRejected reports whether the answer was an HTTP 4xx but a request
// timeout (408) or too many requests (429): the upstream, or a proxy in
// front of it, turned this one request away (a body over its size limit,
// a firewall's rule). It is up, and that says nothing of its health.
func (a *lastAnswer) callRejected() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.status >= 400 && a.status < 500 && a.status != http.StatusRequestTimeout && a.status != http.StatusTooManyRequests
}

// forgot reports whether the answer was a 400, which servers built after
// the TypeScript SDK's express example (server-everything among them)
// send for a session they do not know, where the SDK's own handlers send
// 404 (ErrSessionMissing).
func (a *lastAnswer) forgot() bool {
	if a == nil {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.status == http.StatusBadRequest
}

// refused reports whether the request met a refused connection: it
// carried nothing, so nothing of it ran upstream.
func (a *lastAnswer) refused() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.status == 0 && errors.Is(a.err, syscall.ECONNREFUSED)
}

// accepted reports whether the answer was a 2xx: the upstream took the
// request, so a call may have run there whatever became of its answer.
func (a *lastAnswer) accepted() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.status >= 200 && a.status < 300
}

// get says why the answer refused (refusal; "" when it did not) and the
// wait it asked for (Retry-After).
func (a *lastAnswer) get() (why string, wait time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.status == 0 {
		return refusal(nil, a.err), 0
	}
	resp := &http.Response{StatusCode: a.status, Header: a.header}
	return refusal(resp, nil), endpoint.RetryAfter(a.header, time.Now())
}

// refusal says why an upstream's answer (or the error in its place)
// will be the same until someone changes something, "" when it may pass
// by itself:
//   - a 3xx left unfollowed (it says nowhere to go, or where toolsearch
//     will not: another origin, a POST sent again as a GET, a loop);
//   - a 4xx (credentials refused, no such endpoint, a method or protocol
//     version it does not take, too many requests), but for a request
//     timeout (408) and Too Early (425); and the server errors that say
//     the same of the request (501, 505, a loop: 508, a captive portal:
//     511);
//   - a page that is no MCP answer (a 2xx with content other than JSON or
//     an event stream: the URL of a web site);
//   - a certificate that does not verify.
//
// No answer otherwise (a refused or reset connection, a timeout) and a
// server error are an upstream down or restarting; so is a host name
// that does not resolve, which on Kubernetes is a Service not created
// yet, and asks nothing of the upstream.
func refusal(resp *http.Response, err error) string {
	if resp != nil {
		code := resp.StatusCode
		switch {
		case code >= 300 && code < 400, // not followed: no Location, or a redirect refused (endpoint.SameOrigin)
			code >= 400 && code < 500 && code != http.StatusRequestTimeout && code != http.StatusTooEarly,
			code == http.StatusNotImplemented, code == http.StatusHTTPVersionNotSupported,
			code == http.StatusLoopDetected, code == http.StatusNetworkAuthenticationRequired:
			return fmt.Sprintf("HTTP %d", code)
		case page(resp):
			return fmt.Sprintf("HTTP %d with %s, not an MCP answer", code, mediaType(resp))
		}
		return ""
	}
	var verify *tls.CertificateVerificationError
	var authority x509.UnknownAuthorityError
	var host x509.HostnameError
	var invalid x509.CertificateInvalidError
	if errors.As(err, &verify) || errors.As(err, &authority) || errors.As(err, &host) || errors.As(err, &invalid) {
		return "its certificate does not verify"
	}
	return ""
}

// page reports whether a 2xx answer is no MCP answer: content other
// than JSON or an event stream, a web page where the endpoint should be.
// A 202 and a 204 carry none.
func page(resp *http.Response) bool {
	if code := resp.StatusCode; code < 200 || code >= 300 || code == http.StatusAccepted || code == http.StatusNoContent {
		return false
	}
	// Every answer of a call passes here: the types as the SDKs write
	// them are known without parsing.
	ct := resp.Header.Get("Content-Type")
	if ct == "application/json" || ct == "text/event-stream" {
		return false
	}
	t, _, _ := mime.ParseMediaType(ct)
	return t != "application/json" && t != "text/event-stream"
}

// eventStream reports whether an answer is an event stream.
func eventStream(resp *http.Response) bool {
	ct := resp.Header.Get("Content-Type")
	if ct == "text/event-stream" {
		return true
	}
	t, _, _ := mime.ParseMediaType(ct)
	return t == "text/event-stream"
}

// mediaType quotes an answer's media type for an error message.
func mediaType(resp *http.Response) string {
	t, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	return redact.Echo(t)
}

// prober paces a failing upstream's listings. Only the upstream's loop
// uses it.
type prober struct {
	first, most time.Duration
	refused     time.Duration // the longest gap after a refusal this episode; 0 before the first
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

// failed is how long to wait after a listing failed, refused or not, its
// last answer asking for wait. A refusal doubles the gap each time, up to
// most; a wait the upstream asked for is kept, within first and most;
// anything else waits first.
func (p *prober) failed(refused bool, wait time.Duration) time.Duration {
	gap := p.first
	if refused {
		p.refused = min(max(2*p.refused, p.first), p.most)
		gap = p.jitter(p.refused)
	}
	return min(max(gap, wait), p.most)
}

// succeeded ends a failing episode: the next refusal starts at first.
func (p *prober) succeeded() { p.refused = 0 }
