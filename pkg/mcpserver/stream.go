package mcpserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// How a POST is answered. The SDK's handler always streams (text/event-
// stream), so that what a call sends while it runs (an elicitation
// question, the upstream's progress) travels on the call's own response,
// as the specification asks. Most requests send nothing while they run,
// and many clients read plain JSON more easily, so a POST is streamed only
// when it is a tools/call that forwards to an upstream and the client
// accepts an event stream; every other answer is turned back into one
// application/json body by jsonWriter.
//
// streamHeader tells the tool handlers (through the SDK's
// RequestExtra.Header) which way their POST is answered. A client's own
// header of that name is removed first.
const streamHeader = "X-Toolsearch-Stream"

// metaTools never run long nor ask anything while they run.
var metaTools = map[string]bool{"search_tools": true, "search_tools_regex": true, "get_tool_schema": true, "list_servers": true}

// streams reports whether msg, a POST's only message, is answered as an
// event stream for a client that accepts one.
func streams(msg []byte) bool {
	var m struct {
		Method string `json:"method"`
		Params struct {
			Name string `json:"name"`
		} `json:"params"`
	}
	return json.Unmarshal(msg, &m) == nil && m.Method == "tools/call" && !metaTools[m.Params.Name]
}

// jsonWriter turns the SDK's event stream for one POST into the JSON-RPC
// response it carries, written as application/json. Messages on the
// stream that are not that response (a notification about the call) are
// dropped: the client asked for plain JSON, and the tool handlers were
// told (streamHeader) not to rely on the stream.
type jsonWriter struct {
	http.ResponseWriter
	status   int
	stream   bool // the SDK answered with an event stream, held here
	buf      bytes.Buffer
	response []byte
}

func (w *jsonWriter) WriteHeader(code int) {
	if w.status != 0 {
		return
	}
	w.status = code
	if ct := w.Header().Get("Content-Type"); code == http.StatusOK && ct == "text/event-stream" {
		w.stream = true
		return
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *jsonWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if !w.stream {
		return w.ResponseWriter.Write(p)
	}
	w.buf.Write(p)
	w.scan()
	return len(p), nil
}

// Flush is held back while the stream is being gathered.
func (w *jsonWriter) Flush() {
	if !w.stream {
		if f, ok := w.ResponseWriter.(http.Flusher); ok {
			f.Flush()
		}
	}
}

// scan takes each complete event out of buf and keeps the response.
func (w *jsonWriter) scan() {
	for {
		b := w.buf.Bytes()
		end := bytes.Index(b, []byte("\n\n"))
		if end < 0 {
			return
		}
		var data []byte
		for _, line := range bytes.Split(b[:end], []byte("\n")) {
			if d, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
				data = append(data, d...)
			}
		}
		if isResponse(data) {
			w.response = data
		}
		w.buf.Next(end + 2)
	}
}

// finish writes the gathered response.
func (w *jsonWriter) finish() {
	if !w.stream {
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Del("Connection")
	if w.response == nil {
		// The session closed before the call was answered.
		w.response = []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"the session closed before the request was answered"}}`)
	}
	w.response = tameResponse(w.response)
	h.Set("Content-Length", strconv.Itoa(len(w.response)))
	w.ResponseWriter.WriteHeader(http.StatusOK)
	_, _ = w.ResponseWriter.Write(w.response)
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *jsonWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// tameResponse tames the message of msg when it is a JSON-RPC error
// response. rpcCodes tames the errors of every method handler, but the
// SDK decodes a request's params before any middleware runs, and answers
// params it cannot decode quoting them whole: up to the 1 MiB body, a
// caller's own bytes echoed back.
func tameResponse(msg []byte) []byte {
	var m struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   *jsonrpc.Error  `json:"error"`
	}
	if !bytes.Contains(msg, []byte(`"error"`)) || json.Unmarshal(msg, &m) != nil || m.Error == nil || len(m.ID) == 0 {
		return msg
	}
	tamed := tame(paramsInJSONTerms(m.Error.Message))
	if tamed == m.Error.Message {
		return msg
	}
	m.Error.Message = tamed
	out, err := json.Marshal(m)
	if err != nil {
		return msg
	}
	return out
}

// The SDK's answer to params it cannot read: which method, and the JSON
// decoder's type error, in Go's words ("Go struct field
// mcp.CallToolParamsRaw.name of type string").
var (
	sdkParamsError = regexp.MustCompile(`^handling '([\w/$.-]+)': invalid params: .*json: cannot unmarshal ("(?:[^"\\]|\\.)*") into Go (?:struct field [\w*]+\.\w+\.([\w.]+)|value) of type (.+)$`)
	goKinds        = []struct{ prefix, json string }{
		{"string", "a string"}, {"bool", "true or false"}, {"int", "a number"}, {"uint", "a number"}, {"float", "a number"},
		{"[]", "an array"}, {"map[", "an object"}, {"*", "an object"}, {"mcp.", "an object"},
	}
)

// paramsInJSONTerms is the SDK's answer to params it cannot read put as
// the HTTP API puts a value of the wrong kind: what the field must be, in
// JSON's words, and what it was (`invalid params for tools/call: "name"
// must be a string, got a number`). Any other message is returned as it
// is.
func paramsInJSONTerms(msg string) string {
	m := sdkParamsError.FindStringSubmatch(msg)
	if m == nil {
		return msg
	}
	method, value, field, goType := m[1], m[2], m[3], m[4]
	want := ""
	for _, k := range goKinds {
		if strings.HasPrefix(goType, k.prefix) {
			want = k.json
			break
		}
	}
	if want == "" {
		return msg
	}
	what := "params"
	if field != "" {
		what = strconv.Quote(field)
	}
	got := ""
	if v, err := strconv.Unquote(value); err == nil && v != "" {
		switch c := v[0]; {
		case c == '"':
			got = ", got a string"
		case c == '{':
			got = ", got an object"
		case c == '[':
			got = ", got an array"
		case c == 't' || c == 'f':
			got = ", got true or false"
		case c == 'n':
			got = ", got null"
		case c == '-' || c >= '0' && c <= '9':
			got = ", got a number"
		}
	}
	return fmt.Sprintf("invalid params for %s: %s must be %s%s", method, what, want, got)
}

// tamingWriter passes a POST's event stream through, but for the JSON-RPC
// error response among its events, tamed (tameResponse). The SDK writes
// an event whole in one Write (the data one line of JSON), then flushes;
// a part of an event is held until the rest comes or a flush.
type tamingWriter struct {
	http.ResponseWriter
	held []byte
}

func (w *tamingWriter) Write(p []byte) (int, error) {
	if w.Header().Get("Content-Type") != "text/event-stream" {
		return w.ResponseWriter.Write(p)
	}
	b := p
	if len(w.held) > 0 {
		w.held = append(w.held, p...)
		b = w.held
	}
	for {
		end := bytes.Index(b, []byte("\n\n"))
		if end < 0 {
			break
		}
		if _, err := w.ResponseWriter.Write(tameEvent(b[:end+2])); err != nil {
			return 0, err
		}
		b = b[end+2:]
	}
	w.held = append(w.held[:0], b...)
	return len(p), nil
}

// Flush writes what is held (an event cut short) and flushes.
func (w *tamingWriter) Flush() {
	if len(w.held) > 0 {
		_, _ = w.ResponseWriter.Write(w.held)
		w.held = w.held[:0]
	}
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *tamingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// tameEvent is one event with its data tamed (tameResponse); the event
// itself when that changes nothing.
func tameEvent(ev []byte) []byte {
	lines := bytes.Split(bytes.TrimSuffix(ev, []byte("\n\n")), []byte("\n"))
	at := -1
	for i, line := range lines {
		if bytes.HasPrefix(line, []byte("data: ")) {
			if at >= 0 {
				return ev // data over several lines: not the SDK's
			}
			at = i
		}
	}
	if at < 0 {
		return ev
	}
	data := lines[at][len("data: "):]
	tamed := tameResponse(data)
	if len(tamed) == len(data) && bytes.Equal(tamed, data) {
		return ev
	}
	var out bytes.Buffer
	for i, line := range lines {
		if i == at {
			out.WriteString("data: ")
			out.Write(tamed)
		} else {
			out.Write(line)
		}
		out.WriteByte('\n')
	}
	out.WriteByte('\n')
	return out.Bytes()
}

func isResponse(data []byte) bool {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	return json.Unmarshal(data, &m) == nil && m.Method == "" && len(m.ID) > 0 && (m.Result != nil || m.Error != nil)
}
