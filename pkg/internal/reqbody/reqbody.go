// Package reqbody reads a request's body within its route's bound, and
// throws away the body of a request refused before it was read: the one
// way every route that takes a body does both.
package reqbody

import (
	"errors"
	"io"
	"net/http"
	"strings"
)

// DrainBytes bounds what is read and thrown away of a body that is
// refused, so that a client still sending it reads the answer rather
// than a reset connection.
const DrainBytes = 16 << 20

// ErrTooLarge is Read's error for a body over its bound.
var ErrTooLarge = errors.New("request body over its bound")

// Read returns r's body, or ErrTooLarge when it holds more than limit
// bytes. A body that says so in its Content-Length is refused before a
// byte of it is read (Discard): a client that sent Expect: 100-continue
// is not invited to send 100 GB only to be refused after the first MiB.
func Read(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	if r.ContentLength > limit {
		Discard(r)
		return nil, ErrTooLarge
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if tooBig := (*http.MaxBytesError)(nil); errors.As(err, &tooBig) {
		drain(r.Body)
		return nil, ErrTooLarge
	}
	return body, err
}

// Discard throws away the body of a request that is refused unread, so
// that a client still sending it reads the answer rather than a reset.
// It is not read when the client is waiting on Expect: 100-continue (it
// has sent none and is not asked to: Go's server answers 100 Continue on
// a body's first read, and without it closes the connection after the
// answer), nor when it declares more than DrainBytes: it would be cut
// off anyway, and a client that declares 100 GB and sends a few bytes
// would hold the request while the server waited for the rest.
func Discard(r *http.Request) {
	if !strings.EqualFold(r.Header.Get("Expect"), "100-continue") && r.ContentLength <= DrainBytes {
		drain(r.Body)
	}
}

// drain reads and throws away up to DrainBytes of body.
func drain(body io.Reader) { _, _ = io.Copy(io.Discard, io.LimitReader(body, DrainBytes)) }
