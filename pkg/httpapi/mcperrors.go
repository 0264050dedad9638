package httpapi

import (
	"log/slog"
	"net/http"
	"regexp"
	"strings"
)

// mcpErrors wraps the MCP handler so that its transport errors, which the
// SDK writes as plain text and which can quote the request (a Host header,
// a protocol version), answer like every other route: a JSON error, at
// most maxMCPError bytes of message, with quoted input removed. JSON
// answers (JSON-RPC results and errors) and event streams pass untouched.
func mcpErrors(logger *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ew := &errorWriter{ResponseWriter: w}
		next.ServeHTTP(ew, r)
		if ew.status == 0 {
			return
		}
		msg := quoted.ReplaceAllString(strings.TrimSpace(ew.text.String()), `"…"`)
		if msg == "" {
			msg = http.StatusText(ew.status)
		}
		writeError(w, r, logger, errorf(ew.status, mcpCode(ew.status), "%s", clip(msg, maxMCPError)))
	})
}

const maxMCPError = 200

// quoted matches Go's %q output and other double-quoted text.
var quoted = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)

func mcpCode(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "bad_mcp_request"
	case http.StatusNotFound:
		return "mcp_session_not_found"
	case http.StatusMethodNotAllowed:
		return "method_not_allowed"
	case http.StatusRequestEntityTooLarge:
		return "body_too_large"
	case http.StatusUnsupportedMediaType:
		return "unsupported_media_type"
	case http.StatusForbidden:
		return "forbidden"
	case http.StatusServiceUnavailable:
		return "mcp_sessions_exhausted"
	}
	return "mcp_error"
}

// errorWriter holds back a plain-text error answer (status >= 400, not
// JSON) so that mcpErrors can write it as JSON; anything else goes
// straight through, flushes included.
type errorWriter struct {
	http.ResponseWriter
	status int // set when an error answer is held back
	text   strings.Builder
}

func (e *errorWriter) WriteHeader(code int) {
	if code >= 400 && !strings.HasPrefix(e.Header().Get("Content-Type"), "application/json") && e.status == 0 {
		e.status = code
		e.Header().Del("Content-Type")
		e.Header().Del("X-Content-Type-Options")
		return
	}
	e.ResponseWriter.WriteHeader(code)
}

func (e *errorWriter) Write(p []byte) (int, error) {
	if e.status != 0 {
		if room := 2*maxMCPError - e.text.Len(); room > 0 {
			e.text.Write(p[:min(len(p), room)])
		}
		return len(p), nil
	}
	return e.ResponseWriter.Write(p)
}

func (e *errorWriter) Flush() {
	if f, ok := e.ResponseWriter.(http.Flusher); ok && e.status == 0 {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the real writer.
func (e *errorWriter) Unwrap() http.ResponseWriter { return e.ResponseWriter }
