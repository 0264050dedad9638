package mcpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/toolsearch/toolsearch/pkg/internal/mcphttp"
	"github.com/toolsearch/toolsearch/pkg/internal/reqbody"
)

// MaxRequestBytes bounds one MCP request body: a call_tool's arguments
// are the largest thing a client sends.
const MaxRequestBytes = 1 << 20

// Bounds on what the SDK would echo back in an error: JSON-RPC errors
// repeat the id, and "method not found" the method.
const (
	maxMethodBytes = 64
	maxIDBytes     = 128
)

// maxNumericID bounds a numeric id or progress token to the integers a
// float64 holds exactly. The SDK reads a number through a float64 into an
// int64, so it answered id 1.5 as 1, and 2^63-1 or 1e20 as -2^63: the
// client, waiting for its own id, never saw the answer. 2^53-1 is also
// JavaScript's largest exact integer, the most a TypeScript client makes.
const maxNumericID = 1<<53 - 1

// envelopeError is a POST refused before the SDK sees it, answered as a
// JSON-RPC error (id null: the message could not be trusted to have one).
type envelopeError struct {
	status int
	code   int64
	msg    string
}

func (e *envelopeError) Error() string { return e.msg }

// envelope is what the handler needs of a POST's one JSON-RPC message.
type envelope struct {
	method string
	id     json.RawMessage // nil for a notification or a response
	raw    []byte
}

// checkEnvelope reads a POST body (at most MaxRequestBytes) and checks its
// JSON-RPC message's method and id before the SDK sees them. The error
// never quotes the body.
//
// A batch (a JSON array) is refused: protocol 2025-06-18 removed batches,
// no current client sends one, and one HTTP request that carries hundreds
// of calls would bypass every per-request limit and log line.
func checkEnvelope(w http.ResponseWriter, r *http.Request) (envelope, error) {
	body, err := reqbody.Read(w, r, MaxRequestBytes)
	if err != nil {
		if errors.Is(err, reqbody.ErrTooLarge) {
			return envelope{}, &envelopeError{http.StatusRequestEntityTooLarge, jsonrpc.CodeInvalidRequest, "MCP request body is over 1 MiB"}
		}
		return envelope{}, &envelopeError{http.StatusBadRequest, jsonrpc.CodeParseError, "cannot read the request body"}
	}
	return checkMessage(body)
}

// checkMessage checks one JSON-RPC message.
func checkMessage(body []byte) (envelope, error) {
	if !utf8.Valid(body) {
		// JSON is UTF-8 (RFC 8259). encoding/json would read each bad byte
		// as U+FFFD: an id answered as another, an argument passed on
		// changed, where the HTTP API refuses the same body.
		return envelope{}, &envelopeError{http.StatusBadRequest, jsonrpc.CodeParseError, "the body is not valid UTF-8"}
	}
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		return envelope{}, &envelopeError{http.StatusBadRequest, jsonrpc.CodeInvalidRequest, "JSON-RPC batches are not accepted: send one message per request (protocol 2025-06-18 removed batches)"}
	}
	var env struct {
		Version json.RawMessage  `json:"jsonrpc"`
		Method  *json.RawMessage `json:"method"`
		ID      json.RawMessage  `json:"id"` // "null" when null, unlike a pointer
		Params  struct {
			Meta struct {
				Token *json.RawMessage `json:"progressToken"`
			} `json:"_meta"`
		} `json:"params"`
	}
	// Params, or their _meta, of another shape than these are the SDK's
	// to refuse: encoding/json reads the rest of the message and says
	// which field it could not read.
	var wrongKind *json.UnmarshalTypeError
	if err := json.Unmarshal(trimmed, &env); err != nil && !(errors.As(err, &wrongKind) && strings.HasPrefix(wrongKind.Field, "params")) {
		return envelope{}, &envelopeError{http.StatusBadRequest, jsonrpc.CodeParseError, "the body is not a JSON-RPC message"}
	}
	var version string
	if json.Unmarshal(env.Version, &version) != nil || version != "2.0" {
		// The SDK's own answer quotes what it expected as it quotes the
		// input, and every quotation is taken out of its text errors.
		return envelope{}, &envelopeError{http.StatusBadRequest, jsonrpc.CodeInvalidRequest, `the JSON-RPC message must have "jsonrpc": "2.0"`}
	}
	out := envelope{raw: body}
	if env.Method != nil {
		if json.Unmarshal(*env.Method, &out.method) != nil || !validMethod(out.method) {
			return envelope{}, &envelopeError{http.StatusBadRequest, jsonrpc.CodeInvalidRequest, "the JSON-RPC method must be a string of at most 64 letters, digits and / _ . - $"}
		}
	}
	if len(env.ID) > 0 {
		switch null := string(env.ID) == "null"; {
		case null && env.Method != nil:
			// The SDK refused it too, quoting the method it had blanked.
			return envelope{}, &envelopeError{http.StatusBadRequest, jsonrpc.CodeInvalidRequest, "a JSON-RPC request's id must not be null (a notification has no id)"}
		case null: // an error answering a message the client could not read
		case !validID(env.ID):
			return envelope{}, &envelopeError{http.StatusBadRequest, jsonrpc.CodeInvalidRequest, "the JSON-RPC id must be a string of at most 128 bytes or a whole number of at most 2^53-1 either side of 0"}
		}
		out.id = env.ID
	}
	if token := env.Params.Meta.Token; token != nil && !validID(*token) {
		// Every progress notification relayed to the call carries it back.
		return envelope{}, &envelopeError{http.StatusBadRequest, jsonrpc.CodeInvalidRequest, "a progress token must be a string of at most 128 bytes or a whole number of at most 2^53-1 either side of 0"}
	}
	return out, nil
}

// logLevels are the levels logging/setLevel takes (RFC 5424's, as the
// specification names them).
var logLevels = map[string]bool{"debug": true, "info": true, "notice": true, "warning": true,
	"error": true, "critical": true, "alert": true, "emergency": true}

// checkSetLevel refuses a logging/setLevel whose level is none of
// logLevels. The SDK takes any string, keeps it in the session's state
// for the session's life and logs it whole: up to the 1 MiB body, in each
// of a thousand sessions.
func checkSetLevel(body []byte) error {
	var m struct {
		Params *struct {
			Level string `json:"level"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &m) != nil || m.Params == nil || !logLevels[m.Params.Level] {
		return errors.New(`logging/setLevel takes "level": one of debug, info, notice, warning, error, critical, alert, emergency`)
	}
	return nil
}

// knownMethods are the methods the SDK's server handles. Any other
// request is answered -32601 here, any other notification accepted and
// ignored (202), as JSON-RPC asks, instead of the SDK's HTTP 400.
var knownMethods = map[string]bool{
	"initialize": true, "ping": true, "tools/list": true, "tools/call": true,
	"prompts/list": true, "prompts/get": true, "resources/list": true, "resources/read": true,
	"resources/templates/list": true, "resources/subscribe": true, "resources/unsubscribe": true,
	"completion/complete": true, "logging/setLevel": true, "server/discover": true, "subscriptions/listen": true,
	"notifications/initialized": true, "notifications/cancelled": true, "notifications/progress": true,
	"notifications/roots/list_changed": true,
}

// writeRPCError answers r with a JSON-RPC error. id is the request's
// (checked by checkMessage) or nil. A refusal (status 400 and up) gives
// the status's reason; an answer to a request the SDK does not serve
// (status 200) names what JSON-RPC calls its error.
func writeRPCError(w http.ResponseWriter, r *http.Request, status int, id json.RawMessage, code int64, msg string) {
	reason := mcphttp.Reason(status)
	if status < 400 {
		switch code {
		case jsonrpc.CodeMethodNotFound:
			reason = "method_not_found"
		case jsonrpc.CodeInvalidParams:
			reason = "invalid_params"
		}
	}
	mcphttp.Write(w, r, status, id, code, reason, msg)
}

func validMethod(m string) bool {
	if m == "" || len(m) > maxMethodBytes {
		return false
	}
	for i := 0; i < len(m); i++ {
		c := m[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '/' || c == '_' || c == '.' || c == '-' || c == '$') {
			return false
		}
	}
	return true
}

// validID reports whether raw is an id (or a progress token) the SDK
// answers as it was sent: a bounded string or a whole number within
// maxNumericID (1e2 and 100 alike, being one number).
func validID(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || len(raw) > maxIDBytes+2 {
		return false
	}
	if raw[0] == '"' {
		// Strictly: encoding/json, and so the SDK, would read a lone
		// surrogate as U+FFFD and answer another id.
		return jsontext.Value(raw).IsValid()
	}
	var n json.Number
	if json.Unmarshal(raw, &n) != nil {
		return false
	}
	f, err := strconv.ParseFloat(n.String(), 64)
	return err == nil && f == math.Trunc(f) && math.Abs(f) <= maxNumericID
}

// checkHeaders bounds the MCP headers the SDK quotes in its errors. (An
// unknown Mcp-Session-Id never reaches the SDK: sessions answer it.)
func checkHeaders(h http.Header) error {
	// Which of two values counts would depend on the proxies in between
	// (Go's Header.Get, as the SDK reads them, takes the first; another
	// hop may take the last), so a field that takes one is refused twice.
	for _, k := range singleHeaders {
		if n := len(h.Values(k)); n > 1 {
			return fmt.Errorf("%s is given %d times; it takes one value", k, n)
		}
	}
	if v := h.Get("Mcp-Protocol-Version"); v != "" && !token(v, 32) {
		return errors.New("Mcp-Protocol-Version must be a version such as 2025-06-18")
	}
	return nil
}

// singleHeaders are the request fields /mcp reads that take one value.
var singleHeaders = []string{"Content-Type", "Mcp-Session-Id", "Mcp-Protocol-Version", "Last-Event-ID"}

// token reports whether v is at most n visible ASCII characters.
func token(v string, n int) bool {
	if len(v) > n {
		return false
	}
	for i := 0; i < len(v); i++ {
		if v[i] <= ' ' || v[i] > '~' {
			return false
		}
	}
	return true
}
