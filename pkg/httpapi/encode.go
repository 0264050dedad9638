package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/go-chi/chi/v5/middleware"

	"github.com/toolsearch/toolsearch/pkg/search"
)

// apiError is an error with its HTTP status and a message safe for clients.
type apiError struct {
	Status  int
	Code    string
	Message string
}

func (e *apiError) Error() string { return e.Code + ": " + e.Message }

func errorf(status int, code, format string, args ...any) *apiError {
	return &apiError{Status: status, Code: code, Message: fmt.Sprintf(format, args...)}
}

type errorBody struct {
	Error struct {
		Code      string `json:"code"`
		Message   string `json:"message"`
		RequestID string `json:"request_id,omitempty"`
	} `json:"error"`
}

// writeError is the one place errors become HTTP statuses. Anything that is
// not an apiError or a known sentinel is internal: logged here with its
// detail, and answered with a generic message.
func writeError(w http.ResponseWriter, r *http.Request, logger *slog.Logger, err error) {
	var ae *apiError
	switch {
	case errors.As(err, &ae):
	case errors.Is(err, search.ErrNotReady):
		ae = errorf(http.StatusServiceUnavailable, "not_ready", "the index is not built yet; see GET /mcp/tool-search/status")
	default:
		logger.ErrorContext(r.Context(), "request failed", "err", err, "path", r.URL.Path,
			"request_id", middleware.GetReqID(r.Context()))
		ae = errorf(http.StatusInternalServerError, "internal", "internal error")
	}
	var body errorBody
	body.Error.Code = ae.Code
	body.Error.Message = ae.Message
	body.Error.RequestID = middleware.GetReqID(r.Context())
	if ae.Status == http.StatusMethodNotAllowed {
		w.Header().Set("Allow", allowedMethods(r))
	}
	encode(w, ae.Status, body)
}

func allowedMethods(r *http.Request) string {
	if strings.HasSuffix(r.URL.Path, "/tool-search") {
		return http.MethodPost
	}
	return http.MethodGet
}

// encode writes v as JSON with status. A failure here means the client went
// away; there is no one left to tell.
func encode(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// validator is a request that can check itself after decoding.
type validator interface {
	Valid() error // nil, or an *apiError
}

// decode reads one JSON object into a T, strictly: JSON content type (or
// none), at most MaxBodyBytes, valid UTF-8, no unknown fields, no trailing
// data, then T's own validation. Every failure is an *apiError.
func decode[T validator](w http.ResponseWriter, r *http.Request) (T, error) {
	var v T
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
			return v, errorf(http.StatusUnsupportedMediaType, "unsupported_media_type", "Content-Type must be application/json, got %q", ct)
		}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return v, errorf(http.StatusRequestEntityTooLarge, "body_too_large", "request body is over %d bytes", MaxBodyBytes)
		}
		return v, errorf(http.StatusBadRequest, "unreadable_body", "cannot read request body")
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return v, errorf(http.StatusBadRequest, "empty_body", "request body is empty; want a JSON object")
	}
	if !utf8.Valid(body) {
		return v, errorf(http.StatusBadRequest, "invalid_utf8", "request body is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		return v, jsonError(err)
	}
	if dec.More() {
		return v, errorf(http.StatusBadRequest, "malformed_json", "unexpected data after the JSON object")
	}
	if err := v.Valid(); err != nil {
		return v, err
	}
	return v, nil
}

// jsonError turns a decoding error into a message that names the problem
// (the field, the offset) without echoing the body back.
func jsonError(err error) *apiError {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return errorf(http.StatusBadRequest, "malformed_json", "malformed JSON at byte %d: %s", se.Offset, se.Error())
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errorf(http.StatusBadRequest, "malformed_json", "truncated JSON")
	case errors.As(err, &te):
		field := te.Field
		if field == "" {
			return errorf(http.StatusBadRequest, "wrong_type", "request body must be a JSON object, got JSON %s", te.Value)
		}
		return errorf(http.StatusBadRequest, "wrong_type", "field %q must be %s, got JSON %s", field, jsonType(te.Type.Kind().String()), te.Value)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		// encoding/json has no typed error for this; the message format is stable since Go 1.10.
		return errorf(http.StatusBadRequest, "unknown_field", "unknown field %s", strings.TrimPrefix(err.Error(), "json: unknown field "))
	}
	return errorf(http.StatusBadRequest, "malformed_json", "malformed JSON")
}

func jsonType(kind string) string {
	switch kind {
	case "int", "int64", "int32", "uint", "float32", "float64":
		return "a number"
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "slice":
		return "an array"
	}
	return "an object"
}
