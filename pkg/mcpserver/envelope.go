package mcpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
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

type envelopeError struct {
	status int
	msg    string
}

func (e *envelopeError) Error() string { return e.msg }

func statusOf(err error) int {
	var ee *envelopeError
	if errors.As(err, &ee) {
		return ee.status
	}
	return http.StatusBadRequest
}

// checkEnvelope reads a POST body (at most MaxRequestBytes) and checks
// each JSON-RPC message's method and id before the SDK sees them. The
// error never quotes the body.
func checkEnvelope(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxRequestBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, &envelopeError{http.StatusRequestEntityTooLarge, "MCP request body is over 1 MiB"}
		}
		return nil, &envelopeError{http.StatusBadRequest, "cannot read the request body"}
	}
	return body, checkMessages(body)
}

// checkMessages checks a JSON-RPC message, or a batch of them.
func checkMessages(body []byte) error {
	trimmed := bytes.TrimSpace(body)
	var msgs []json.RawMessage
	if len(trimmed) > 0 && trimmed[0] == '[' {
		if err := json.Unmarshal(trimmed, &msgs); err != nil {
			return &envelopeError{http.StatusBadRequest, "the body is not a JSON-RPC message"}
		}
	} else {
		msgs = []json.RawMessage{trimmed}
	}
	for _, m := range msgs {
		var env struct {
			Method *json.RawMessage `json:"method"`
			ID     *json.RawMessage `json:"id"`
		}
		if err := json.Unmarshal(m, &env); err != nil {
			return &envelopeError{http.StatusBadRequest, "the body is not a JSON-RPC message"}
		}
		if env.Method != nil {
			var method string
			if json.Unmarshal(*env.Method, &method) != nil || !validMethod(method) {
				return &envelopeError{http.StatusBadRequest, "the JSON-RPC method must be a string of at most 64 letters, digits and / _ . - $"}
			}
		}
		if env.ID != nil && !validID(*env.ID) {
			return &envelopeError{http.StatusBadRequest, "the JSON-RPC id must be a string of at most 128 bytes, a number or null"}
		}
	}
	return nil
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

func validID(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || len(raw) > maxIDBytes+2 {
		return false
	}
	switch raw[0] {
	case '"':
		var s string
		return json.Unmarshal(raw, &s) == nil
	case 'n':
		return string(raw) == "null"
	}
	var n json.Number
	return json.Unmarshal(raw, &n) == nil
}

// checkHeaders bounds the MCP headers the SDK quotes in its errors. (An
// unknown Mcp-Session-Id never reaches the SDK: sessions answer it.)
func checkHeaders(h http.Header) error {
	if v := h.Get("Mcp-Protocol-Version"); v != "" && !token(v, 32) {
		return errors.New("Mcp-Protocol-Version must be a version such as 2025-06-18")
	}
	return nil
}

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
