// Package mcphttp is what an HTTP answer of the MCP endpoint looks like
// when the MCP SDK does not write it: the methods the endpoint takes, and
// the JSON-RPC error that refuses a request (a missing key, a spent
// budget, a session that is not there), which both the API's middleware
// and the MCP server write. An MCP client reads every answer of /mcp as
// JSON-RPC; an operator reads data.reason and finds data.request_id in the
// log.
package mcphttp

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5/middleware"
)

// Methods are the HTTP methods of Streamable HTTP: POST a message, GET the
// session's stream, DELETE the session. Allow lists them.
var Methods = []string{http.MethodGet, http.MethodPost, http.MethodDelete}

// Allow is the Allow header of a 405 from /mcp, made from Methods so the
// two cannot drift.
var Allow = strings.Join(Methods, ", ")

// Reason is this API's error code for a refusal with HTTP status.
func Reason(status int) string {
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

// Write answers r with status and a JSON-RPC error: id is the request's
// when it could be read (nil: null), reason goes in data with the request
// id. msg must already be bounded and free of the caller's input.
func Write(w http.ResponseWriter, r *http.Request, status int, id json.RawMessage, code int64, reason, msg string) {
	if id == nil {
		id = json.RawMessage("null")
	}
	type data struct {
		Reason    string `json:"reason"`
		RequestID string `json:"request_id,omitempty"`
	}
	type rpcError struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
		Data    data   `json:"data"`
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	// Only a malformed id could fail, and ids are checked before they
	// get here; an answer with a null id is still one the client reads.
	if enc.Encode(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   rpcError        `json:"error"`
	}{"2.0", id, rpcError{code, msg, data{reason, middleware.GetReqID(r.Context())}}}) != nil {
		Write(w, r, status, nil, code, reason, msg)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}
