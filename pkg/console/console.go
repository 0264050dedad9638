// Package console serves the operator console: one static page, embedded
// in the binary, that calls the service's own endpoints with the key the
// operator pastes. It holds no state and no secrets; the page keeps the key
// in the tab's session storage and sends it only as a bearer header.
package console

import (
	"embed"
	"io/fs"
	"net/http"
	"strings"
)

//go:embed assets
var assets embed.FS

// Path is where the console is served.
const Path = "/console/"

// csp allows this origin's own files and API and nothing else: no inline
// script or style, no frames, no form posts, no third-party anything.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Handler serves the console's files under Path. Every error is fail's
// to answer, so that it is the API's JSON error: a path that names no
// file (404), and what the file server would answer in plain text, a
// Range past a file's end (416) or a precondition that does not hold
// (412).
func Handler(fail func(w http.ResponseWriter, r *http.Request, status int)) http.Handler {
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	files := http.StripPrefix(Path, http.FileServerFS(sub))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if name := strings.TrimPrefix(r.URL.Path, Path); name != "" {
			if _, err := fs.Stat(sub, name); err != nil {
				fail(w, r, http.StatusNotFound)
				return
			}
		}
		h := w.Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-cache") // revalidate: a new binary brings new files
		files.ServeHTTP(&errorsTo{ResponseWriter: w, r: r, fail: fail}, r)
	})
}

// errorsTo hands an error status to fail instead of writing it, and
// drops the plain text that would have followed.
type errorsTo struct {
	http.ResponseWriter
	r      *http.Request
	fail   func(w http.ResponseWriter, r *http.Request, status int)
	failed bool
}

func (e *errorsTo) WriteHeader(status int) {
	if status < http.StatusBadRequest {
		e.ResponseWriter.WriteHeader(status)
		return
	}
	e.failed = true
	e.fail(e.ResponseWriter, e.r, status)
}

func (e *errorsTo) Write(b []byte) (int, error) {
	if e.failed {
		return len(b), nil
	}
	return e.ResponseWriter.Write(b)
}
