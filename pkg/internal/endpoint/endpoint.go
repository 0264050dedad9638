// Package endpoint guards the HTTP services the process calls with
// credentials (upstream MCP servers, the embedding provider): their
// configured URLs are checked once, at start-up, and their redirects are
// followed only within the origin configured. net/http drops only
// Authorization, Cookie and WWW-Authenticate on a redirect to another
// domain, and only when they were set on the request, so a key in another
// header (Azure's api-key) or one added by a transport below the client
// would be handed to whatever host a redirect names.
package endpoint

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/toolsearch/toolsearch/pkg/redact"
)

// Check reports what keeps raw from being the URL of a service to call:
// it must parse as an absolute http or https URL naming a host, without a
// fragment; and, when paths are appended to it (a base URL: base is
// true), without a query either, which the path would land in. Its error
// quotes raw without user info or query, where credentials hide.
func Check(raw string, base bool) error {
	quoted := redact.Echo(redact.URL(raw))
	lower := strings.ToLower(raw)
	if !strings.HasPrefix(lower, "http://") && !strings.HasPrefix(lower, "https://") {
		return fmt.Errorf("%s must begin http:// or https://", quoted)
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		// url's own error quotes raw whole, secrets and all.
		return fmt.Errorf("%s is not a URL", quoted)
	case u.Host == "":
		return fmt.Errorf("%s names no host", quoted)
	case strings.Contains(raw, "#"): // an empty fragment too
		return fmt.Errorf("%s must not have a #fragment", quoted)
	case base && (u.RawQuery != "" || u.ForceQuery):
		return fmt.Errorf("%s must not have a ?query: the API's path is appended to it, and would land in the query", quoted)
	}
	return nil
}

// MaxRedirects is how many redirects SameOrigin follows.
const MaxRedirects = 5

// ErrOtherOrigin is the error of a redirect SameOrigin refused for its
// destination; the client's error wraps it.
var ErrOtherOrigin = errors.New("redirected to another origin: refused, credentials go only to the origin configured")

// ErrMethodChange is the error of a redirect SameOrigin refused because it
// would change the request's method; the client's error wraps it.
var ErrMethodChange = errors.New("refused; configure the address it redirects to")

// SameOrigin is an http.Client CheckRedirect that follows a redirect only
// to the scheme, host and port of the chain's first request, at most MaxRedirects
// times. Comparing with the first request, not the last, refuses a chain
// that leaves and comes back at its first hop away. A redirect that
// would change the method is refused too: Go follows a 301, 302 or 303
// to a POST with a GET, without the body, which no API here answers
// with the POST's answer (an MCP endpoint took it for a second event
// stream of the session, 409, and the SDK closed the session over that).
func SameOrigin(req *http.Request, via []*http.Request) error {
	if len(via) >= MaxRedirects {
		return fmt.Errorf("stopped after %d redirects", MaxRedirects)
	}
	if from := via[0].URL; req.URL.Scheme != from.Scheme || req.URL.Host != from.Host {
		return ErrOtherOrigin
	}
	if from := via[len(via)-1].Method; req.Method != from {
		// The address is not quoted: the service chose it, and it may
		// carry a credential in its query.
		return fmt.Errorf("a redirect would send the %s as a %s without its body: %w", from, req.Method, ErrMethodChange)
	}
	return nil
}

// Repeatable marks a request's header safe to send twice (an embedding,
// a listing, a ping; never a tool call, which the service may have run).
// Go's transport then sends such a request that meets a pooled
// connection closed under it (a service's keep-alive ending as it
// arrives) again at once, on a new connection. The mark is an
// Idempotency-Key with no value, which is not sent.
func Repeatable(h http.Header) { h["Idempotency-Key"] = nil }

// RetryAfter reads how long a service asks its callers to wait:
// retry-after-ms (OpenAI and Azure send it, in milliseconds), else
// Retry-After in seconds or as an HTTP date. 0 when absent, unreadable or
// past.
func RetryAfter(h http.Header, now time.Time) time.Duration {
	if ms, err := strconv.ParseFloat(h.Get("Retry-After-Ms"), 64); err == nil && ms > 0 && ms < 1e9 {
		return time.Duration(ms * float64(time.Millisecond))
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs > 0 && secs < 1e6 {
			return time.Duration(secs) * time.Second
		}
		return 0
	}
	if at, err := http.ParseTime(v); err == nil && at.After(now) {
		return at.Sub(now)
	}
	return 0
}
