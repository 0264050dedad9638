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

// Handler serves the console's files under Path; a path that names no
// file is answered by notFound, so that it is the API's JSON error.
func Handler(notFound http.Handler) http.Handler {
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	files := http.StripPrefix(Path, http.FileServerFS(sub))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if name := strings.TrimPrefix(r.URL.Path, Path); name != "" {
			if _, err := fs.Stat(sub, name); err != nil {
				notFound.ServeHTTP(w, r)
				return
			}
		}
		h := w.Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-cache") // revalidate: a new binary brings new files
		files.ServeHTTP(w, r)
	})
}
