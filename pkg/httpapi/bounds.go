package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5/middleware"
	"github.com/toolsearch/toolsearch/pkg/redact"
)

// Everything a caller sends is unbounded until bounded here: the method,
// the path, and the X-Request-Id header reach metric labels, log lines and
// error bodies. Each label has a closed set of values, and each echoed
// string a length cap, so no request can add a series or a megabyte.

// methodLabel maps a request method to a closed set: the methods of
// RFC 9110 and PATCH, else "other".
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace:
		return m
	}
	return "other"
}

// codeLabel is the status as a label; only valid three-digit codes pass.
func codeLabel(status int) string {
	if status < 100 || status > 599 {
		return "other"
	}
	return strconv.Itoa(status)
}

// maxEcho is how much of a caller's method or path an error message or
// log line quotes: the one bound every error's quote of input keeps.
const maxEcho = redact.MaxEcho

// clip cuts s to at most n bytes on a rune boundary, marking the cut.
func clip(s string, n int) string { return redact.Clip(s, n, "…") }

// maxRequestID bounds an X-Request-Id taken from the caller.
const maxRequestID = 64

// requestID takes the caller's X-Request-Id when it is a short token of
// safe characters (so a proxy's id threads through the logs), and makes a
// fresh one otherwise: the id is logged and returned in every error body.
// It replaces chi's middleware.RequestID, which trusts the header whole.
func requestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var id string
		if v := r.Header.Values(middleware.RequestIDHeader); len(v) == 1 {
			id = v[0] // of two, neither is the request's
		}
		if !validRequestID(id) {
			id = newRequestID()
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), middleware.RequestIDKey, id)))
	})
}

func validRequestID(id string) bool {
	if id == "" || len(id) > maxRequestID {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.' || c == ':' || c == '/') {
			return false
		}
	}
	return true
}

func newRequestID() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}
