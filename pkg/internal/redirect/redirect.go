// Package redirect keeps an HTTP client's redirects within the origin it
// was asked at, for clients that send credentials: net/http drops only
// Authorization, Cookie and WWW-Authenticate on a redirect to another
// domain, and only when they were set on the request, so a key in another
// header (Azure's api-key) or one added by a transport below the client
// would be handed to whatever host a redirect names.
package redirect

import (
	"errors"
	"fmt"
	"net/http"
)

// Max is how many redirects SameOrigin follows.
const Max = 5

// ErrOtherOrigin is the error of a redirect SameOrigin refused for its
// destination; the client's error wraps it.
var ErrOtherOrigin = errors.New("redirected to another origin: refused, credentials go only to the origin configured")

// SameOrigin is an http.Client CheckRedirect that follows a redirect only
// to the scheme, host and port of the chain's first request, at most Max
// times. Comparing with the first request, not the last, refuses a chain
// that leaves and comes back at its first hop away.
func SameOrigin(req *http.Request, via []*http.Request) error {
	if len(via) >= Max {
		return fmt.Errorf("stopped after %d redirects", Max)
	}
	if from := via[0].URL; req.URL.Scheme != from.Scheme || req.URL.Host != from.Host {
		return ErrOtherOrigin
	}
	return nil
}
