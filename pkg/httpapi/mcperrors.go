package httpapi

import (
	"net/http"
	"strings"
	"time"

	"github.com/toolsearch/toolsearch/pkg/internal/mcphttp"
)

// mcpErrors wraps the MCP handler so that the transport errors the SDK
// writes as plain text, which can quote the request (a Host header, a
// protocol version), answer as a JSON-RPC error, which an MCP client
// reads, in the shape every route answers ({"error":{"code","message"}},
// the code a JSON-RPC number): at most maxMCPError bytes of message, with
// quoted input removed, and the reason and request id in data. JSON
// answers (JSON-RPC results and errors) and event streams pass untouched.
//
// Streams, a GET's and a call's, last as long as they need, so the
// request's write deadline is not theirs; each write gets writeIdle
// instead: a client that takes nothing of a stream for that long loses
// it, and with it what was being sent (up to a 4 MiB call result).
func mcpErrors(next http.Handler, writeIdle time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		_ = rc.SetWriteDeadline(time.Time{})
		ew := &errorWriter{ResponseWriter: w, rc: rc, idle: writeIdle}
		if r.Method == http.MethodPost && encoded(r.Header) != "" {
			// The SDK would read a compressed body as JSON, and a plain one
			// labelled compressed as plain.
			w.Header().Set("Accept-Encoding", "identity")
			http.Error(ew, "a Content-Encoding other than identity is not supported; send the body uncompressed", http.StatusUnsupportedMediaType)
		} else {
			next.ServeHTTP(ew, r)
		}
		if ew.status == 0 {
			return
		}
		msg := unquote(strings.TrimSpace(ew.text.String()))
		if msg == "" {
			msg = http.StatusText(ew.status)
		}
		writeRPCError(w, r, ew.status, mcphttp.Reason(ew.status), clip(msg, maxMCPError))
	})
}

// writeRPCError answers status as a JSON-RPC error with no id, what an
// MCP client reads from any answer of /mcp.
func writeRPCError(w http.ResponseWriter, r *http.Request, status int, reason, msg string) {
	code := int64(-32600) // invalid request
	if status == http.StatusNotFound {
		code = -32001 // session not found, as the TypeScript SDK answers it
	}
	mcphttp.Write(w, r, status, nil, code, reason, msg)
}

// mcpRoute reports whether r is MCP's: every error of it, those the
// shared middleware answers before its handler too (a missing key's 401,
// a spent budget's 429), is a JSON-RPC error, and localHost leaves its
// Host to the SDK's own check.
func mcpRoute(r *http.Request) bool { return r.URL.Path == mcpPath }

// mcpPath is the MCP endpoint's one path (routes.go).
const mcpPath = "/mcp"

const maxMCPError = 200

// unquote replaces each quotation in msg, Go's %q output and other
// double-quoted text, by "…": the input the SDK quotes. The text held is
// cut at twice the bound, which can leave the last quotation open (170
// bytes of a Last-Event-ID went out), so one msg ends in goes too.
func unquote(msg string) string {
	var b strings.Builder
	open := -1 // where the quotation being read began
	for i := 0; i < len(msg); i++ {
		switch c := msg[i]; {
		case c == '\\' && open >= 0:
			i++ // an escaped character, inside a quotation
		case c == '"' && open >= 0:
			b.WriteString(`"…"`)
			open = -1
		case c == '"':
			open = i
		default:
			if open < 0 {
				b.WriteByte(c)
			}
		}
	}
	if open >= 0 {
		b.WriteString(`"…`)
	}
	return b.String()
}

// errorWriter holds back a plain-text error answer (status >= 400, not
// JSON) so that its caller (mcpErrors, consoleFiles) can write it as
// JSON; anything else goes straight through, flushes included.
type errorWriter struct {
	http.ResponseWriter
	status int // set when an error answer is held back
	text   strings.Builder
	rc     *http.ResponseController
	idle   time.Duration // the longest one write or flush may wait on the client
}

// within gives the next write or flush e.idle to reach the client; with
// no idle, the request's own deadline stands.
func (e *errorWriter) within() {
	if e.idle > 0 {
		_ = e.rc.SetWriteDeadline(time.Now().Add(e.idle))
	}
}

func (e *errorWriter) WriteHeader(code int) {
	if code >= 400 && !strings.HasPrefix(e.Header().Get("Content-Type"), "application/json") && e.status == 0 {
		e.status = code
		e.Header().Del("Content-Type") // nosniff stays: every answer has it (answerHeaders)
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
	e.within()
	return e.ResponseWriter.Write(p)
}

func (e *errorWriter) Flush() {
	if f, ok := e.ResponseWriter.(http.Flusher); ok && e.status == 0 {
		e.within()
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the real writer.
func (e *errorWriter) Unwrap() http.ResponseWriter { return e.ResponseWriter }
