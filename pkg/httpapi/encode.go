package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/toolsearch/toolsearch/pkg/access"
	"github.com/toolsearch/toolsearch/pkg/catalog"
	"github.com/toolsearch/toolsearch/pkg/inspect"

	"github.com/go-chi/chi/v5/middleware"
	gojson "github.com/goccy/go-json"

	"github.com/toolsearch/toolsearch/pkg/internal/jsonerr"
	"github.com/toolsearch/toolsearch/pkg/internal/reqbody"
	"github.com/toolsearch/toolsearch/pkg/jsonkeys"
	"github.com/toolsearch/toolsearch/pkg/redact"
	"github.com/toolsearch/toolsearch/pkg/search"
)

// apiError is an error with its HTTP status and a message safe for clients.
type apiError struct {
	Status  int
	Code    string
	Message string
	// RetryAfter, when positive, is sent as Retry-After (seconds).
	RetryAfter int
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
	var re *search.RequestError
	var te *search.UnknownTemplateError
	var se *inspect.UnknownServerError
	var oe *access.OverBudgetError
	switch {
	case errors.As(err, &ae):
	case errors.As(err, &oe):
		w.Header().Set("Retry-After", strconv.Itoa(oe.RetrySeconds()))
		ae = errorf(http.StatusTooManyRequests, "rate_limited", "%s", oe.Error())
	case errors.As(err, &re):
		status := http.StatusBadRequest
		if re.Code == search.CodeInputTooLarge {
			status = http.StatusRequestEntityTooLarge
		}
		ae = errorf(status, re.Code, "%s", re.Message)
	case errors.As(err, &te):
		ae = errorf(http.StatusNotFound, "unknown_template", "%s", te.Error())
	case errors.As(err, &se):
		ae = errorf(http.StatusNotFound, "unknown_server", "%s", clip(se.Error(), maxEcho))
	case errors.Is(err, search.ErrUnknownSearch):
		ae = errorf(http.StatusNotFound, "unknown_search", "%s", err.Error())
	case errors.Is(err, search.ErrLearningOff):
		ae = errorf(http.StatusNotFound, "learning_off", "%s", err.Error())
	case errors.Is(err, search.ErrUnknownTool):
		ae = errorf(http.StatusNotFound, "unknown_tool", "%s", err.Error())
	case errors.Is(err, catalog.ErrAmbiguousTool):
		ae = errorf(http.StatusBadRequest, "ambiguous", "%s", clip(err.Error(), 300))
	case errors.Is(err, access.ErrUnauthorized):
		w.Header().Set("WWW-Authenticate", `Bearer realm="toolsearch"`)
		ae = errorf(http.StatusUnauthorized, "unauthorized", "a valid API key is required: send Authorization: Bearer <key>")
	case errors.Is(err, context.Canceled):
		// The client went away; nobody reads this answer, and it is no fault of ours.
		ae = errorf(499, "client_closed_request", "the request was canceled")
	case errors.Is(err, context.DeadlineExceeded):
		ae = errorf(http.StatusServiceUnavailable, "timeout", "the request took too long")
	case errors.Is(err, search.ErrNotReady):
		// Start-up's build takes a second or a few: a client that reads
		// Retry-After (toolsearch eval -url does) asks again then.
		ae = errorf(http.StatusServiceUnavailable, "not_ready", "the index is not built yet; see GET /mcp/tool-search/status")
		ae.RetryAfter = 1
	default:
		if logger == nil {
			logger = slog.New(slog.DiscardHandler)
		}
		logger.ErrorContext(r.Context(), "request failed", "err", err, "path", clip(r.URL.Path, maxEcho),
			"request_id", middleware.GetReqID(r.Context()))
		ae = errorf(http.StatusInternalServerError, "internal", "internal error")
	}
	if ae.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(ae.RetryAfter))
	}
	if mcpRoute(r) {
		writeRPCError(w, r, ae.Status, ae.Code, ae.Message)
		return
	}
	var body errorBody
	body.Error.Code = ae.Code
	body.Error.Message = ae.Message
	body.Error.RequestID = middleware.GetReqID(r.Context())
	encode(w, ae.Status, body)
}

// encode writes v as JSON with status, whole and with its Content-Length:
// a body over net/http's 2 KB chunking buffer (a search answer of a dozen
// tools) would otherwise go out chunked, which costs framing at both ends.
// A failure to write means the client went away; there is no one left to
// tell.
func encode(w http.ResponseWriter, status int, v any) {
	buf := bodies.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= maxPooledBody { // let a rare huge listing go
			bodies.Put(buf)
		}
	}()
	buf.Reset()
	if err := marshal(buf, v); err != nil {
		// Only a value that is not JSON-shaped gets here: a bug.
		status = http.StatusInternalServerError
		buf.Reset()
		buf.WriteString(`{"error":{"code":"internal","message":"internal error"}}` + "\n")
	}
	writeJSON(w, status, buf.Bytes())
}

// writeJSON sends body, JSON, with status and its Content-Length.
func writeJSON(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// marshal appends v's JSON and a newline to buf, byte for byte what
// encoding/json's Encoder writes with HTML escaping off
// (TestMarshalMatchesEncodingJSON, FuzzMarshal). It uses goccy/go-json: a
// response is mostly tool names and descriptions, and encoding/json's
// reflection and escaping made it the largest cost of a search request
// after the search itself (BENCHMARKS.md). Requests are still decoded by
// encoding/json, whose errors the 4xx answers are built from.
func marshal(buf *bytes.Buffer, v any) error {
	enc := gojson.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// bodies pools response buffers.
var bodies = sync.Pool{New: func() any { return new(bytes.Buffer) }}

const maxPooledBody = 1 << 20

// decode reads one JSON object into a T, strictly: JSON content type (or
// none), at most limit bytes (the route's bound), valid UTF-8, no unknown
// fields, no trailing data. Every failure is an *apiError, or a
// *search.RequestError from a value that decodes itself.
func decode[T any](w http.ResponseWriter, r *http.Request, limit int64) (T, error) {
	var v T
	var charset string
	if n := len(r.Header.Values("Content-Type")); n > 1 {
		// Which would count depends on the proxies in between (Get reads
		// the first, another hop may read the last): neither does.
		return v, errorf(http.StatusUnsupportedMediaType, "unsupported_media_type", "Content-Type is given %d times; send one, application/json", n)
	}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, params, err := mime.ParseMediaType(ct)
		charset = params["charset"]
		if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
			return v, errorf(http.StatusUnsupportedMediaType, "unsupported_media_type", "Content-Type must be application/json, got %s", redact.Echo(ct))
		}
	}
	if coding := encoded(r.Header); coding != "" {
		w.Header().Set("Accept-Encoding", "identity")
		return v, errorf(http.StatusUnsupportedMediaType, "unsupported_media_type", "Content-Encoding %s is not supported; send the body uncompressed", redact.Echo(coding))
	}
	body, err := reqbody.Read(w, r, limit)
	if err != nil {
		if errors.Is(err, reqbody.ErrTooLarge) {
			return v, errorf(http.StatusRequestEntityTooLarge, "body_too_large", "request body is over %d bytes", limit)
		}
		return v, errorf(http.StatusBadRequest, "unreadable_body", "cannot read request body")
	}
	switch string(bytes.TrimSpace(body)) {
	case "":
		return v, errorf(http.StatusBadRequest, "empty_body", "request body is empty; want a JSON object")
	case "null":
		// encoding/json reads null into a struct as nothing, without error:
		// the request then failed as if its fields were missing.
		return v, errorf(http.StatusBadRequest, "wrong_type", "request body must be a JSON object, got JSON null")
	}
	if !utf8.Valid(body) {
		// RFC 8259 defines no charset for JSON and has recipients ignore
		// one, so a label is not refused (clients that write UTF-8 under
		// another name are served); it is named when it explains the
		// failure.
		if charset != "" && !strings.EqualFold(charset, "utf-8") {
			return v, errorf(http.StatusBadRequest, "invalid_utf8", "request body is not valid UTF-8, which JSON must be (Content-Type names charset %s)", redact.Echo(charset))
		}
		return v, errorf(http.StatusBadRequest, "invalid_utf8", "request body is not valid UTF-8")
	}
	if bytes.HasPrefix(body, byteOrderMark) {
		// RFC 8259 forbids sending one; encoding/json's own message
		// would quote its first byte as "ï".
		return v, errorf(http.StatusBadRequest, "malformed_json", "request body starts with a byte order mark (U+FEFF); send JSON without one")
	}
	// encoding/json would take {"QUERY":…} as "query" and keep the last of
	// two equal keys; both are errors here, as unknown fields are.
	if err := jsonkeys.Object(body, knownFields[T]()); err != nil {
		var ke *jsonkeys.Error
		if errors.As(err, &ke) && ke.Problem == "repeated" {
			return v, errorf(http.StatusBadRequest, "duplicate_field", "%s", clip(ke.Error(), 200))
		}
		return v, errorf(http.StatusBadRequest, "unknown_field", "%s", clip(err.Error(), 1024))
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		var re *search.RequestError
		if errors.As(err, &re) {
			return v, err // a value that decodes itself (search.Message) said what is wrong
		}
		return v, jsonError(err, body)
	}
	if dec.More() {
		return v, errorf(http.StatusBadRequest, "malformed_json", "unexpected data after the JSON object")
	}
	return v, nil
}

var byteOrderMark = []byte("\uFEFF")

// encoded returns the first content coding of a request's body other than
// identity, or "". Without this check a gzip body would be read as
// malformed JSON, and a plain one labelled gzip as if it were plain.
func encoded(h http.Header) string {
	for _, v := range h.Values("Content-Encoding") {
		for c := range strings.SplitSeq(v, ",") {
			if c = strings.TrimSpace(c); c != "" && !strings.EqualFold(c, "identity") {
				return c
			}
		}
	}
	return ""
}

// knownFields are T's JSON keys, found once per type.
func knownFields[T any]() []string {
	t := reflect.TypeFor[T]()
	if f, ok := fieldCache.Load(t); ok {
		return f.([]string)
	}
	f := jsonkeys.Fields[T]()
	fieldCache.Store(t, f)
	return f
}

var fieldCache sync.Map // reflect.Type -> []string

// jsonError turns a decoding error of body into a message that names the
// problem (the field, the offset) without echoing the body back.
func jsonError(err error, body []byte) *apiError {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return errorf(http.StatusBadRequest, "malformed_json", "malformed JSON at byte %d: %s", se.Offset, se.Error())
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errorf(http.StatusBadRequest, "malformed_json", "truncated JSON")
	case errors.As(err, &te):
		m, _ := jsonerr.Type(te, body)
		if m.Field == "" {
			return errorf(http.StatusBadRequest, "wrong_type", "request body must be a JSON object, got JSON %s", m.Got)
		}
		return errorf(http.StatusBadRequest, "wrong_type", "field %s must be %s, got JSON %s", redact.Echo(m.Field), m.Want, m.Got)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		// encoding/json has no typed error for this; the message format is stable since Go 1.10.
		return errorf(http.StatusBadRequest, "unknown_field", "unknown field %s", strings.TrimPrefix(err.Error(), "json: unknown field "))
	}
	return errorf(http.StatusBadRequest, "malformed_json", "malformed JSON")
}
