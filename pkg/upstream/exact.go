package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsearch/toolsearch/pkg/internal/jsontree"
)

// The SDK decodes a call's structuredContent (and every _meta) and a listed
// tool's schemas into an any, their numbers into float64s: an upstream's
// {"id":1234567890123456789} (a snowflake id) reached the caller as
// 1234567890123456800, and get_tool_schema showed a schema's "default":
// 1234567890123456789 or "enum": [9007199254740993] as ...800 and ...992,
// values the upstream never wrote. The answers to a call and to a listing
// are kept as they are read, and what they carry passed on with its
// numbers as the upstream wrote them.

// keptAnswer is the answer to a call's or a listing page's POST, as
// read: the whole body of a JSON answer; of an event stream, only the
// event that holds the response, the events before it (progress, the
// upstream's requests) dropped as each ends, so that what is kept beside
// what the SDK reads is one answer, never a stream's worth. Of the
// progress notices among them it keeps a count, which the call waits for
// its relay to reach (progressRelay).
type keptAnswer struct {
	mu       sync.Mutex
	buf      bytes.Buffer
	sse      bool            // an event stream rather than one JSON-RPC message
	searched int             // bytes of buf searched for an event's end, in vain
	response json.RawMessage // the response's result, once an event held it
	token    string          // the call's progress token, if it has one
	progress int             // progress notifications under token before the response, on every attempt
}

type keptAnswerKey struct{}

// withKeptAnswer has the answer to the request made under ctx kept in k.
func withKeptAnswer(ctx context.Context, k *keptAnswer) context.Context {
	return context.WithValue(ctx, keptAnswerKey{}, k)
}

// keep has body's bytes copied into k as they are read. Its reads are
// bounded by the operation's read limit already, and so is k's copy.
func (k *keptAnswer) keep(body io.ReadCloser, sse bool) io.ReadCloser {
	k.mu.Lock()
	k.buf.Reset()
	k.sse, k.searched, k.response = sse, 0, nil
	k.mu.Unlock()
	return &keptBody{ReadCloser: body, k: k}
}

type keptBody struct {
	io.ReadCloser
	k *keptAnswer
}

func (b *keptBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.k.add(p[:n])
	return n, err
}

func (k *keptAnswer) add(p []byte) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.response != nil {
		return
	}
	k.buf.Write(p)
	for k.sse {
		b := k.buf.Bytes()
		end := eventEnd(b, k.searched)
		if end < 0 {
			// One long event arriving in many reads is searched once,
			// not again from its start at each read.
			k.searched = len(b)
			return
		}
		for _, data := range eventData(b[:end]) {
			r, token := readMessage(data)
			if r != nil {
				k.response = r
				k.buf = bytes.Buffer{}
				return
			}
			if k.token != "" && token == k.token {
				k.progress++
			}
		}
		k.buf.Next(end)
		k.searched = 0
	}
}

// eventEnd is the length of the first event in b through the blank line
// that ends it, or -1; b's first searched bytes hold no end but may hold
// the start of one.
func eventEnd(b []byte, searched int) int {
	from := max(searched-3, 0)
	end := -1
	if i := bytes.Index(b[from:], []byte("\n\n")); i >= 0 {
		end = from + i + 2
	}
	if i := bytes.Index(b[from:], []byte("\r\n\r\n")); i >= 0 && (end < 0 || from+i+4 < end) {
		end = from + i + 4
	}
	return end
}

// result is the result of the response kept, as the upstream wrote it,
// or nil. A POST's stream carries one response (the request's own; a
// message with a method is the upstream's request or notice).
func (k *keptAnswer) result() json.RawMessage {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.response != nil {
		return k.response
	}
	msgs := [][]byte{k.buf.Bytes()}
	if k.sse {
		msgs = eventData(k.buf.Bytes()) // an unterminated last event
	}
	for _, m := range msgs {
		if r, _ := readMessage(m); r != nil {
			return r
		}
	}
	return nil
}

// progressSeen is how many progress notifications for the call's token
// came before its response.
func (k *keptAnswer) progressSeen() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.progress
}

// readMessage reads msg once: its result when it is a JSON-RPC response,
// and its token when it is a progress notification with a string token.
func readMessage(msg []byte) (result json.RawMessage, progressToken string) {
	var m struct {
		Method json.RawMessage `json:"method"`
		Result json.RawMessage `json:"result"`
		Params json.RawMessage `json:"params"`
	}
	if json.Unmarshal(msg, &m) != nil {
		return nil, ""
	}
	if m.Method == nil {
		if m.Result != nil {
			return bytes.Clone(m.Result), ""
		}
		return nil, ""
	}
	var method string
	var p struct {
		Token any `json:"progressToken"`
	}
	if json.Unmarshal(m.Method, &method) == nil && method == "notifications/progress" && json.Unmarshal(m.Params, &p) == nil {
		progressToken, _ = p.Token.(string)
	}
	return nil, progressToken
}

// exactResult gives res, a call's result as the SDK read it, the
// structuredContent and the _meta (its own and its content blocks') of
// the result kept, their numbers as the upstream wrote them.
func (k *keptAnswer) exactResult(res *mcp.CallToolResult) {
	var r struct {
		Structured json.RawMessage `json:"structuredContent"`
		Meta       json.RawMessage `json:"_meta"`
		Content    []struct {
			Type     string          `json:"type"`
			Meta     json.RawMessage `json:"_meta"`
			Resource *struct {
				Meta json.RawMessage `json:"_meta"`
			} `json:"resource"`
		} `json:"content"`
	}
	if json.Unmarshal(k.result(), &r) != nil {
		return
	}
	if res.StructuredContent != nil && len(r.Structured) > 0 && string(r.Structured) != "null" {
		res.StructuredContent = r.Structured
	}
	exactMeta(&res.Meta, r.Meta)
	if len(r.Content) != len(res.Content) {
		return // not the blocks the SDK read: its reading stands
	}
	for i, c := range res.Content {
		kept := r.Content[i]
		meta, kind := contentMeta(c)
		if meta == nil || kind != kept.Type {
			continue
		}
		exactMeta(meta, kept.Meta)
		if e, ok := c.(*mcp.EmbeddedResource); ok && e.Resource != nil && kept.Resource != nil {
			exactMeta(&e.Resource.Meta, kept.Resource.Meta)
		}
	}
}

// contentMeta is c's _meta and the type its block is written with, or
// nil for a block a call's result does not carry.
func contentMeta(c mcp.Content) (*mcp.Meta, string) {
	switch c := c.(type) {
	case *mcp.TextContent:
		return &c.Meta, "text"
	case *mcp.ImageContent:
		return &c.Meta, "image"
	case *mcp.AudioContent:
		return &c.Meta, "audio"
	case *mcp.ResourceLink:
		return &c.Meta, "resource_link"
	case *mcp.EmbeddedResource:
		return &c.Meta, "resource"
	}
	return nil, ""
}

// exactMeta sets *m, a _meta the SDK read, to raw read with its numbers
// kept; a _meta the SDK did not read (or not as an object) stays as it is.
func exactMeta(m *mcp.Meta, raw json.RawMessage) {
	if *m == nil || len(raw) == 0 {
		return
	}
	if v, err := jsontree.Object(raw); err == nil {
		*m = v
	}
}

// listedSchemas is one listed tool's schemas as the upstream wrote them,
// and its execution, which the SDK's Tool does not read.
type listedSchemas struct {
	Name         string          `json:"name"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema"`
	Execution    struct {
		TaskSupport string `json:"taskSupport"`
	} `json:"execution"`
}

// schemas is the schemas of each tool of a listing's page kept, in its
// order, or nil.
func (k *keptAnswer) schemas() []listedSchemas {
	var r struct {
		Tools []listedSchemas `json:"tools"`
	}
	if json.Unmarshal(k.result(), &r) != nil {
		return nil
	}
	return r.Tools
}

// exactJSON is jsontree.Marshal's raw, nil for null or what cannot be
// read.
func exactJSON(raw json.RawMessage) json.RawMessage {
	b, err := jsontree.Marshal(raw)
	if err != nil {
		return nil
	}
	return b
}

// eventData is the data of each event of an event stream: its data lines
// joined by newlines, as the SSE specification reads them.
func eventData(stream []byte) [][]byte {
	var out [][]byte
	var data []byte
	have := false
	for line := range bytes.Lines(stream) {
		line = bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
		if len(line) == 0 {
			if have {
				out = append(out, data)
			}
			data, have = nil, false
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		if string(field) != "data" {
			continue
		}
		value = bytes.TrimPrefix(value, []byte(" "))
		if have {
			data = append(data, '\n')
		}
		data, have = append(data, value...), true
	}
	if have {
		out = append(out, data)
	}
	return out
}
