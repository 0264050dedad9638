package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsearch/toolsearch/pkg/catalog"
)

// TestStructuredContentExact: a call's structuredContent (and _meta, its
// own and each content block's) reaches the caller as the upstream wrote it, whether the upstream answers with one
// JSON message or an event stream (with progress notices before the
// result). The SDK alone read its numbers into float64s, and
// 1234567890123456789 came out as 1234567890123456800.
func TestStructuredContentExact(t *testing.T) {
	const exact = `{"id":1234567890123456789,"n":-9007199254740993,"big":1e300,"f":0.1,"s":"\u00e9","a":[18446744073709551615]}`
	for _, tt := range []struct {
		name string
		json bool
	}{{"event stream", false}, {"JSON answer", true}} {
		for _, p := range protocols {
			t.Run(p.name+"/"+tt.name, func(t *testing.T) {
				f := p.fake(t, 0, 0)
				if tt.json {
					f.handler.Store(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return f.srv }, &mcp.StreamableHTTPOptions{JSONResponse: true, Stateless: f.stateless}))
				}
				f.handle("exact", func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					if token := req.Params.GetProgressToken(); token != nil {
						req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: 1, Total: 2, Message: `{"structuredContent":1}`})
					}
					return &mcp.CallToolResult{Meta: mcp.Meta{"trace": json.RawMessage(`{"span":18446744073709551615}`)},
						Content: []mcp.Content{
							&mcp.TextContent{Text: exact, Meta: blockMeta(1)},
							&mcp.ImageContent{Data: []byte("x"), MIMEType: "image/png", Meta: blockMeta(2)},
							&mcp.AudioContent{Data: []byte("x"), MIMEType: "audio/wav", Meta: blockMeta(3)},
							&mcp.ResourceLink{URI: "file:///a", Name: "a", Meta: blockMeta(4)},
							&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///b", Text: "b", Meta: blockMeta(6)}, Meta: blockMeta(5)},
							&mcp.TextContent{Text: "no _meta"},
						}, StructuredContent: json.RawMessage(exact)}, nil
				})
				f.handle("plain", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					return text("no structured content"), nil
				})
				m := start(t, []Config{{Name: "u", URL: f.http.URL, Refresh: time.Hour}}, nil)
				for _, progress := range []func(context.Context, *mcp.ProgressNotificationParams){nil, func(context.Context, *mcp.ProgressNotificationParams) {}} {
					res, err := m.Call(t.Context(), "u", "exact", nil, CallOptions{Progress: progress})
					if err != nil {
						t.Fatal(err)
					}
					got, _ := json.Marshal(res.StructuredContent)
					var want bytes.Buffer
					json.Compact(&want, []byte(exact))
					if !bytes.Equal(got, want.Bytes()) {
						t.Errorf("progress %v: structuredContent %s; want %s", progress != nil, got, want.Bytes())
					}
					if meta, _ := json.Marshal(res.Meta); string(meta) != `{"trace":{"span":18446744073709551615}}` {
						t.Errorf("progress %v: _meta %s", progress != nil, meta)
					}
					metas := []mcp.Meta{}
					for _, c := range res.Content {
						switch c := c.(type) {
						case *mcp.TextContent:
							metas = append(metas, c.Meta)
						case *mcp.ImageContent:
							metas = append(metas, c.Meta)
						case *mcp.AudioContent:
							metas = append(metas, c.Meta)
						case *mcp.ResourceLink:
							metas = append(metas, c.Meta)
						case *mcp.EmbeddedResource:
							metas = append(metas, c.Meta, c.Resource.Meta)
						}
					}
					if got, _ := json.Marshal(metas); string(got) != `[{"id":9007199254740993001},{"id":9007199254740993002},{"id":9007199254740993003},{"id":9007199254740993004},{"id":9007199254740993005},{"id":9007199254740993006},null]` {
						t.Errorf("progress %v: content blocks' _meta %s", progress != nil, got)
					}
				}
				res, err := m.Call(t.Context(), "u", "plain", nil, CallOptions{})
				if err != nil || res.StructuredContent != nil {
					t.Errorf("a result without structuredContent: %+v, %v", res, err)
				}
			})
		}
	}
}

// blockMeta is a content block's _meta with an id no float64 holds.
func blockMeta(i int) mcp.Meta {
	return mcp.Meta{"id": json.RawMessage(fmt.Sprintf("900719925474099300%d", i))}
}

func TestEventData(t *testing.T) {
	tests := []struct {
		stream string
		want   []string
	}{
		{"event: message\ndata: {\"a\":1}\n\n", []string{`{"a":1}`}},
		{"data: one\r\ndata: two\r\n\r\ndata:three\n\n", []string{"one\ntwo", "three"}},
		{": a comment\nid: 7\n\ndata: last, unterminated", []string{"last, unterminated"}},
		{"", nil},
	}
	for _, tt := range tests {
		got := eventData([]byte(tt.stream))
		if len(got) != len(tt.want) {
			t.Errorf("%q: %q; want %q", tt.stream, got, tt.want)
			continue
		}
		for i := range got {
			if string(got[i]) != tt.want[i] {
				t.Errorf("%q: event %d %q; want %q", tt.stream, i, got[i], tt.want[i])
			}
		}
	}
}

// TestListedSchemasExact: a listed tool's schemas keep their numbers as
// the upstream wrote them, on every page. Through a float64, a default of
// 1234567890123456789 became 1234567890123456800 and an enum of
// 9007199254740993 became 9007199254740992.
func TestListedSchemasExact(t *testing.T) {
	const in = `{"type":"object","properties":{"id":{"type":"integer","enum":[9007199254740993],"default":1234567890123456789},"n":{"type":"number","maximum":18446744073709551615}}}`
	const out = `{"type":"object","properties":{"at":{"type":"integer","minimum":-9223372036854775808}}}`
	f := newFake(t, 2, 3) // pages of two tools
	f.srv.AddTool(&mcp.Tool{Name: "exact", Description: "Takes one big id.", InputSchema: json.RawMessage(in), OutputSchema: json.RawMessage(out)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return text("ok"), nil })
	m := start(t, []Config{{Name: "u", URL: f.http.URL, Refresh: time.Hour}}, nil)
	waitFor(t, "the listing", func() bool { return len(names(m)) == 4 })
	for _, p := range m.Parts() {
		for _, s := range p.Servers {
			for _, tool := range s.Tools {
				if tool.Name != "exact" {
					if !bytes.Contains(tool.Schemas.Input(), []byte(`"type":"number"`)) {
						t.Errorf("%s: input schema %s", tool.Name, tool.Schemas.Input())
					}
					continue
				}
				for _, want := range []string{"9007199254740993", "1234567890123456789", "18446744073709551615"} {
					if !bytes.Contains(tool.Schemas.Input(), []byte(want)) {
						t.Errorf("input schema %s; want %s in it", tool.Schemas.Input(), want)
					}
				}
				if !bytes.Contains(tool.Schemas.Output(), []byte("-9223372036854775808")) {
					t.Errorf("output schema %s; want -9223372036854775808 in it", tool.Schemas.Output())
				}
			}
		}
	}
}

// TestListedTaskSupport: a listed tool's execution.taskSupport, which
// the SDK's Tool does not read, is read from the listing as written; a
// value the spec does not name reads as none.
func TestListedTaskSupport(t *testing.T) {
	var k keptAnswer
	k.buf.WriteString(`{"jsonrpc":"2.0","id":1,"result":{"tools":[` +
		`{"name":"a","inputSchema":{"type":"object"},"execution":{"taskSupport":"required"}},` +
		`{"name":"b","inputSchema":{"type":"object"},"execution":{"taskSupport":"optional"}},` +
		`{"name":"c","inputSchema":{"type":"object"}},` +
		`{"name":"d","inputSchema":{"type":"object"},"execution":{"taskSupport":"someday","ttl":5}}]}}`)
	listed := k.schemas()
	want := []catalog.TaskSupport{catalog.TasksRequired, catalog.TasksOptional, catalog.TasksForbidden, catalog.TasksForbidden}
	if len(listed) != len(want) {
		t.Fatalf("%d tools read, want %d", len(listed), len(want))
	}
	for i, l := range listed {
		if got := convert(&mcp.Tool{Name: l.Name, InputSchema: map[string]any{"type": "object"}}, &listed[i]).Tasks; got != want[i] {
			t.Errorf("%s: task support %s, want %s", l.Name, got, want[i])
		}
	}
}

// TestKeptAnswerHoldsOneEvent: of an event stream, what is kept is the
// event being read, never the notices before the response; the response's
// result is found whether the stream's lines end in LF or CRLF, and
// however the reads split it.
func TestKeptAnswerHoldsOneEvent(t *testing.T) {
	for _, eol := range []string{"\n", "\r\n"} {
		notice := "event: message" + eol + `data: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1,"result":{}}}` + eol + eol
		response := "event: message" + eol + `data: {"jsonrpc":"2.0","id":3,"result":{"structuredContent":{"id":1234567890123456789}}}` + eol + eol
		stream := strings.Repeat(notice, 1000) + response
		k := &keptAnswer{}
		body := k.keep(io.NopCloser(strings.NewReader(stream)), true)
		most := 0
		for buf := make([]byte, 7); ; {
			_, err := body.Read(buf)
			k.mu.Lock()
			most = max(most, k.buf.Len())
			k.mu.Unlock()
			if err != nil {
				break
			}
		}
		if limit := max(len(notice), len(response)) + 7; most > limit { // an event and the rest of a read
			t.Errorf("eol %q: %d bytes kept at once, over one event's %d", eol, most, limit)
		}
		if got := string(k.result()); got != `{"structuredContent":{"id":1234567890123456789}}` {
			t.Errorf("eol %q: result %s", eol, got)
		}
	}
}

// FuzzKeptAnswer: an upstream's answer, however its reads are split,
// yields the result it yields read whole, and never a panic.
func FuzzKeptAnswer(f *testing.F) {
	f.Add("event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"structuredContent\":{\"n\":9007199254740993}}}\n\n", true, uint8(3))
	f.Add("data: {\"jsonrpc\":\"2.0\",\"id\":1,\r\ndata: \"result\":{}}\r\n\r\n", true, uint8(1))
	f.Add(`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a","inputSchema":{"type":"object","maximum":1e400}}]}}`, false, uint8(5))
	f.Add("data: {}\n\n\n\ndata:\n\n", true, uint8(0))
	f.Add("data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"t\",\"progress\":1}}\n\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"u\",\"progress\":1}}\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n", true, uint8(9))
	f.Fuzz(func(t *testing.T, stream string, sse bool, split uint8) {
		whole := &keptAnswer{token: "t"}
		io.Copy(io.Discard, whole.keep(io.NopCloser(strings.NewReader(stream)), sse))
		parts := &keptAnswer{token: "t"}
		body := parts.keep(io.NopCloser(strings.NewReader(stream)), sse)
		for buf := make([]byte, int(split)+1); ; {
			if _, err := body.Read(buf); err != nil {
				break
			}
		}
		if a, b := whole.result(), parts.result(); !bytes.Equal(a, b) {
			t.Fatalf("read whole: %s; in reads of %d: %s", a, int(split)+1, b)
		}
		if a, b := whole.progressSeen(), parts.progressSeen(); a != b {
			t.Fatalf("progress notices before the response: %d read whole, %d in reads of %d", a, b, int(split)+1)
		}
		parts.schemas()
		exactJSON(parts.result())
	})
}

// TestProgressSeen: the kept answer counts the progress notices under the
// call's token that came before the response, and no others.
func TestProgressSeen(t *testing.T) {
	notice := func(token string) string {
		return `data: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":` + token + `,"progress":1}}` + "\n\n"
	}
	response := `data: {"jsonrpc":"2.0","id":1,"result":{}}` + "\n\n"
	for _, tt := range []struct {
		name   string
		stream string
		want   int
	}{
		{"two before the response", notice(`"t"`) + notice(`"t"`) + response, 2},
		{"another call's token and a number", notice(`"u"`) + notice(`1`) + notice(`"t"`) + response, 1},
		{"after the response", notice(`"t"`) + response + notice(`"t"`), 1},
		{"the upstream's own request", `data: {"jsonrpc":"2.0","id":7,"method":"roots/list"}` + "\n\n" + response, 0},
		{"no response yet", notice(`"t"`) + notice(`"t"`), 2},
		{"a method name with an escape", strings.Replace(notice(`"t"`), "/progress", `\/progress`, 1) + response, 1},
		{"params not an object", `data: {"jsonrpc":"2.0","method":"notifications/progress","params":[1]}` + "\n\n" + response, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			k := &keptAnswer{token: "t"}
			io.Copy(io.Discard, k.keep(io.NopCloser(strings.NewReader(tt.stream)), true))
			if got := k.progressSeen(); got != tt.want {
				t.Errorf("progressSeen %d, want %d", got, tt.want)
			}
		})
	}
}
