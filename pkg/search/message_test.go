package search

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/toolsearch/toolsearch/pkg/access"
	"github.com/toolsearch/toolsearch/pkg/embedding"
	"github.com/toolsearch/toolsearch/pkg/internal/jsonread"
)

// TestMessageShapes: a turn as each chat API writes it reads as the same
// role and text; what carries no text is skipped, and a shape none of
// them has is an error that says what is wrong.
func TestMessageShapes(t *testing.T) {
	for _, tt := range []struct {
		name, turn        string
		role, content     string
		wantErr, wantCode string
	}{
		{"plain", `{"role":"user","content":"close it"}`, "user", "close it", "", ""},
		{"openai parts", `{"role":"user","content":[{"type":"text","text":"close"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}},{"type":"text","text":"it"}]}`, "user", "close\nit", "", ""},
		{"openai developer", `{"role":"developer","content":"be brief"}`, "system", "be brief", "", ""},
		{"openai tool calls", `{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}],"refusal":null}`, "assistant", "", "", ""},
		{"openai tool result", `{"role":"tool","tool_call_id":"c1","content":"3 tickets"}`, RoleTool, "3 tickets", "", ""},
		{"openai name", `{"role":"user","name":"ana","content":"hi"}`, "user", "hi", "", ""},
		{"responses api parts", `{"role":"user","content":[{"type":"input_text","text":"a"},{"type":"input_image","image_url":"x"}]}`, "user", "a", "", ""},
		{"ollama", `{"role":"user","content":"see this","images":["AAAA"],"thinking":"hm"}`, "user", "see this", "", ""},
		{"anthropic blocks", `{"role":"assistant","content":[{"type":"thinking","thinking":"x","signature":"s"},{"type":"text","text":"done"},{"type":"tool_use","id":"t","name":"f","input":{}}]}`, "assistant", "done", "", ""},
		{"anthropic tool results only", `{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"42 rows"}]}]}`, RoleTool, "42 rows", "", ""},
		{"anthropic results and words", `{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"42 rows"},{"type":"text","text":"now export them"}]}`, "user", "42 rows\nnow export them", "", ""},
		{"gemini", `{"role":"model","parts":[{"text":"ok"},{"functionCall":{"name":"f","args":{}}}]}`, "assistant", "ok", "", ""},
		{"gemini thought", `{"role":"model","parts":[{"text":"pondering","thought":true,"thoughtSignature":"c2ln"},{"text":"ok","thought":false}]}`, "assistant", "ok", "", ""},
		{"escaped names", `{"\u0072ole":"user","cont\u0065nt":"x"}`, "user", "x", "", ""},
		{"unknown role kept", `{"role":"robot","content":"x"}`, "robot", "x", "", ""},
		{"reasoning keys", `{"role":"assistant","content":"ok","reasoning_content":"hm","reasoning":"hm","reasoning_details":[],"annotations":[],"prefix":false}`, "assistant", "ok", "", ""},
		{"responses message item", `{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"done","annotations":[]}]}`, "assistant", "done", "", ""},
		{"responses easy message", `{"type":"message","role":"user","content":"close it"}`, "user", "close it", "", ""},
		{"responses function call", `{"type":"function_call","id":"fc_1","call_id":"c1","name":"get_ticket","arguments":"{}","status":"completed"}`, "assistant", "", "", ""},
		{"responses function output", `{"type":"function_call_output","call_id":"c1","output":"WEB-412 In review"}`, RoleTool, "WEB-412 In review", "", ""},
		{"responses output parts", `{"type":"function_call_output","call_id":"c1","output":[{"type":"input_text","text":"3 rows"},{"type":"input_image","image_url":"x"}]}`, RoleTool, "3 rows", "", ""},
		{"responses screenshot", `{"type":"computer_call_output","call_id":"c1","output":{"type":"computer_screenshot","image_url":"x"}}`, RoleTool, "", "", ""},
		{"responses reasoning", `{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"think"}],"encrypted_content":"xx"}`, "assistant", "", "", ""},
		{"responses item reference", `{"type":"item_reference","id":"msg_0"}`, "assistant", "", "", ""},
		{"unknown item type", `{"type":"mesage","role":"user","content":"x"}`, "", "", `"type" "mesage" is not an item of OpenAI's Responses API`, "invalid_messages"},
		{"type a number", `{"type":1,"role":"user","content":"x"}`, "", "", `"type" must be a string`, "invalid_messages"},
		{"an item's id without its type", `{"role":"user","content":"x","id":"m1"}`, "", "", `key "id" is unknown`, "invalid_messages"},
		{"output on a chat turn", `{"role":"tool","content":"x","output":"y"}`, "", "", `key "output" is unknown`, "invalid_messages"},
		{"output part without text", `{"type":"function_call_output","output":[{"type":"text"}]}`, "", "", `of type "text" but has no "text"`, "invalid_messages"},
		{"misspelt key on a message item", `{"type":"message","role":"user","contnet":"x"}`, "", "", `key "contnet" is unknown (did you mean "content"?)`, "invalid_messages"},
		{"misspelt key", `{"role":"user","contnet":"x"}`, "", "", `key "contnet" is unknown (did you mean "content"?)`, "invalid_messages"},
		{"a long key is clipped", `{"role":"user","` + strings.Repeat("k", 5000) + `":1}`, "", "", `key "kkkkkkkk`, "invalid_messages"},
		{"no role", `{"content":"x"}`, "", "", `has no "role"`, "invalid_messages"},
		{"role a number", `{"role":1,"content":"x"}`, "", "", `"role" must be a string`, "invalid_messages"},
		{"content a number", `{"role":"user","content":1}`, "", "", `"content" must be a string or an array of parts, got a number`, "invalid_messages"},
		{"content an object", `{"role":"user","content":{"text":"x"}}`, "", "", "got an object", "invalid_messages"},
		{"part a string", `{"role":"user","content":["x"]}`, "", "", `part 0 of a turn's "content" must be an object, got a string`, "invalid_messages"},
		{"text part without text", `{"role":"user","content":[{"type":"text"}]}`, "", "", `of type "text" but has no "text"`, "invalid_messages"},
		{"text not a string", `{"role":"user","parts":[{"text":true}]}`, "", "", `"text" must be a string, got a boolean`, "invalid_messages"},
		{"type not a string", `{"role":"user","content":[{"type":1}]}`, "", "", `"type" must be a string`, "invalid_messages"},
		{"null turn", `null`, "", "", "is null", "invalid_messages"},
		{"a string turn", `"hi"`, "", "", "must be an object", "invalid_messages"},
		{"results nested too deep", `{"role":"user","content":[{"type":"tool_result","content":[{"type":"tool_result","content":[{"type":"tool_result","content":[{"type":"tool_result","content":[{"type":"tool_result","content":"x"}]}]}]}]}]}`, "", "", "nests tool results", "invalid_messages"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var m Message
			err := json.Unmarshal([]byte(tt.turn), &m)
			var re *RequestError
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("error %v", err)
			case tt.wantErr == "" && (m.Role != tt.role || m.Content != tt.content):
				t.Errorf("read %+v, want role %q content %q", m, tt.role, tt.content)
			case tt.wantErr != "" && (!errors.As(err, &re) || re.Code != tt.wantCode || !strings.Contains(re.Message, tt.wantErr)):
				t.Errorf("error %v, want %s with %q", err, tt.wantCode, tt.wantErr)
			case err != nil && len(err.Error()) > 400: // a clipped echo and the keys a turn takes
				t.Errorf("error of %d bytes: a caller's input is echoed unbounded", len(err.Error()))
			}
		})
	}
}

// TestNativeConversationsRankAsFlat: a conversation sent as an API writes
// it is answered exactly as the same turns flattened to {role, content}.
func TestNativeConversationsRankAsFlat(t *testing.T) {
	svc := New(Config{Embedder: embedding.NewLocal(256), Version: "test"})
	if _, err := svc.Build(t.Context(), defaultSetup(t)); err != nil {
		t.Fatal(err)
	}
	flat := []Message{
		{Role: "system", Content: "You route requests to tools."},
		{Role: "user", Content: "Ticket WEB-412 is done, QA signed it off."},
		{Role: "assistant", Content: "Noted."},
		{Role: RoleTool, Content: "WEB-412: status In review"},
		{Role: "user", Content: "close it out"},
	}
	for _, tt := range []struct{ name, messages string }{
		{"openai", `[{"role":"developer","content":"You route requests to tools."},
			{"role":"user","content":[{"type":"text","text":"Ticket WEB-412 is done, QA signed it off."}]},
			{"role":"assistant","content":"Noted.","tool_calls":[{"id":"c","type":"function","function":{"name":"get_ticket","arguments":"{}"}}]},
			{"role":"tool","tool_call_id":"c","content":"WEB-412: status In review"},
			{"role":"user","content":[{"type":"text","text":"close it out"},{"type":"image_url","image_url":{"url":"https://example.com/a.png"}}]}]`},
		{"anthropic", `[{"role":"system","content":"You route requests to tools."},
			{"role":"user","content":[{"type":"text","text":"Ticket WEB-412 is done, QA signed it off."}]},
			{"role":"assistant","content":[{"type":"text","text":"Noted."},{"type":"tool_use","id":"t","name":"get_ticket","input":{}}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"WEB-412: status In review"}]}]},
			{"role":"user","content":"close it out"}]`},
		{"responses api", `[{"role":"developer","content":"You route requests to tools."},
			{"type":"message","role":"user","content":[{"type":"input_text","text":"Ticket WEB-412 is done, QA signed it off."}]},
			{"type":"reasoning","id":"rs_1","summary":[]},
			{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Noted.","annotations":[]}]},
			{"type":"function_call_output","call_id":"c","output":"WEB-412: status In review"},
			{"role":"user","content":[{"type":"input_text","text":"close it out"}]}]`},
		{"gemini", `[{"role":"system","parts":[{"text":"You route requests to tools."}]},
			{"role":"user","parts":[{"text":"Ticket WEB-412 is done, QA signed it off."}]},
			{"role":"model","parts":[{"text":"Noted."},{"functionCall":{"name":"get_ticket","args":{}}}]},
			{"role":"function","parts":[{"text":"WEB-412: status In review"}]},
			{"role":"user","parts":[{"text":"close it out"}]}]`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var native []Message
			if err := json.Unmarshal([]byte(tt.messages), &native); err != nil {
				t.Fatal(err)
			}
			want, got := mustSearch(t, svc, Request{Messages: flat, TopK: ptr(5)}), mustSearch(t, svc, Request{Messages: native, TopK: ptr(5)})
			want.TookMS, got.TookMS = 0, 0
			w, _ := json.Marshal(want)
			g, _ := json.Marshal(got)
			if string(g) != string(w) || len(got.Tools) == 0 {
				t.Errorf("native %s answered\n%s\nflat:\n%s", tt.name, g, w)
			}
		})
	}
}

// An agent's loop held as Responses items: forty tool calls with their
// outputs between two asks are 82 items in 6 KB, refused over 64 turns
// before; the newest ask is what ranks.
func TestLongAgentLoopIsRead(t *testing.T) {
	svc := New(Config{Embedder: embedding.NewLocal(256), Version: "test"})
	if _, err := svc.Build(t.Context(), defaultSetup(t)); err != nil {
		t.Fatal(err)
	}
	items := []string{`{"type":"message","role":"user","content":"Find the failing CI run for the web repo."}`}
	for i := range 40 {
		items = append(items, fmt.Sprintf(`{"type":"function_call","call_id":"c%d","name":"list_workflow_runs","arguments":"{\"page\":%d}"}`, i, i),
			fmt.Sprintf(`{"type":"function_call_output","call_id":"c%d","output":"run %d: passed"}`, i, i))
	}
	items = append(items, `{"type":"message","role":"user","content":"now merge the approved pull request"}`)
	var msgs []Message
	if err := json.Unmarshal([]byte("["+strings.Join(items, ",")+"]"), &msgs); err != nil {
		t.Fatal(err)
	}
	res, err := svc.Search(t.Context(), Request{Messages: msgs, TopK: ptr(3)}, access.Caller{})
	if err != nil {
		t.Fatalf("%d items: %v", len(msgs), err)
	}
	if len(res.Tools) == 0 || res.Tools[0].Name != "merge_pull_request" {
		t.Errorf("the loop's newest ask ranked %+v first", res.Tools)
	}
}

// TestLongChatIsRead: a chat's text past MaxInputBytes in all, in turns
// the digest never reads, and an older turn longer than the whole limit
// (a pasted log), is ranked on its newest ask; it was refused 413 when the
// limit counted every turn's text.
func TestLongChatIsRead(t *testing.T) {
	svc := New(Config{Embedder: embedding.NewLocal(256), Version: "test"})
	if _, err := svc.Build(t.Context(), defaultSetup(t)); err != nil {
		t.Fatal(err)
	}
	var msgs []Message
	for i := range 40 {
		msgs = append(msgs, Message{Role: "user", Content: fmt.Sprintf("Step %d of the release went fine. ", i) + strings.Repeat("All checks are green and nothing needs doing. ", 18)},
			Message{Role: "assistant", Content: "Noted."})
	}
	msgs = append(msgs, Message{Role: "tool", Content: strings.Repeat("2026-12-06 build log line: compiled ok\n", MaxInputBytes/30)},
		Message{Role: "user", Content: "now merge the approved pull request"})
	total := 0
	for _, m := range msgs {
		total += len(m.Content)
	}
	if total <= 2*MaxInputBytes {
		t.Fatalf("the chat holds %d bytes, not past twice the limit", total)
	}
	res, err := svc.Search(t.Context(), Request{Messages: msgs, TopK: ptr(3)}, access.Caller{})
	if err != nil {
		t.Fatalf("%d turns, %d bytes: %v", len(msgs), total, err)
	}
	if len(res.Tools) == 0 || res.Tools[0].Name != "merge_pull_request" {
		t.Errorf("the chat's newest ask ranked %+v first", res.Tools)
	}
}

// FuzzMessage: no turn, however malformed, panics; one that reads has a
// known role or the one it was given, and text that reads back the same
// once written as {role, content}.
func FuzzMessage(f *testing.F) {
	for _, s := range []string{`{"role":"user","content":"x"}`, `{"role":"user","content":[{"type":"text","text":"a"},{"type":"tool_result","content":[{"type":"text","text":"b"}]}]}`,
		`{"role":"model","parts":[{"text":"ok"},{"inlineData":{}}]}`, `{"role":"tool","content":null,"tool_call_id":"c"}`, `null`, `[]`, `{"role":"user","content":[1]}`,
		`{"type":"function_call_output","call_id":"c","output":[{"type":"input_text","text":"x"}]}`, `{"type":"reasoning","summary":[]}`, `{"type":"message","id":"m","role":"user","content":"x"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var m Message
		if err := m.UnmarshalJSON(data); err != nil {
			var re *RequestError
			if !errors.As(err, &re) {
				t.Fatalf("%q: error %v is not a RequestError", data, err)
			}
			return
		}
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		var again Message
		if err := json.Unmarshal(b, &again); err != nil || again != m {
			t.Fatalf("%q read as %+v, which reads back as %+v (%v)", data, m, again, err)
		}
	})
}

// BenchmarkMessages is what reading a conversation costs: six flat turns
// as the service's own type reads them, the same turns as a plain struct
// (what Message was before it read other APIs' shapes), and an OpenAI
// client's turns with parts and a tool call.
func BenchmarkMessages(b *testing.B) {
	flat := `[{"role":"system","content":"You route requests to tools."},{"role":"user","content":"Ticket WEB-412 is done, QA signed it off."},{"role":"assistant","content":"Noted."},{"role":"tool","content":"WEB-412: status In review"},{"role":"user","content":"then close it out"},{"role":"user","content":"close it out"}]`
	native := `[{"role":"developer","content":"You route requests to tools."},{"role":"user","content":[{"type":"text","text":"Ticket WEB-412 is done, QA signed it off."}]},{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"get_ticket","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c","content":"WEB-412: status In review"},{"role":"user","content":[{"type":"text","text":"then close it out"}]},{"role":"user","content":"close it out"}]`
	b.Run("flat", func(b *testing.B) {
		for b.Loop() {
			var m []Message
			if err := json.Unmarshal([]byte(flat), &m); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("flat-plain-struct", func(b *testing.B) {
		for b.Loop() {
			var m []struct{ Role, Content string }
			if err := json.Unmarshal([]byte(flat), &m); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("openai", func(b *testing.B) {
		for b.Loop() {
			var m []Message
			if err := json.Unmarshal([]byte(native), &m); err != nil {
				b.Fatal(err)
			}
		}
	})
	// The dearest body a search takes: a tool's output of 37,000 parts
	// of one letter, in 1 MiB.
	parts := `[{"role":"tool","content":[` + strings.Repeat(`{"type":"text","text":"a"},`, 37_000) + `{"type":"text","text":"b"}]},{"role":"user","content":"close it out"}]`
	b.Run("parts-1MiB", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var m []Message
			if err := json.Unmarshal([]byte(parts), &m); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestConversationNamesTheTurn: an error in a turn of a request's
// messages says which turn, and a conversation that is not an array gets
// encoding/json's own type error, as any other field.
func TestConversationNamesTheTurn(t *testing.T) {
	for _, tt := range []struct {
		name, body, want string
	}{
		{"the second turn's content", `{"messages":[{"role":"user","content":"a"},{"role":"user","content":5}]}`, `"messages[1].content" must be a string or an array of parts, got a number`},
		{"a part of the third", `{"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"},{"role":"user","content":["x"]}]}`, `part 0 of "messages[2].content" must be an object`},
		{"a misspelt key", `{"messages":[{"role":"user","contnet":"x"}]}`, `"messages[0]": key "contnet" is unknown (did you mean "content"?)`},
		{"a null turn", `{"messages":[{"role":"user","content":"a"},null]}`, `"messages[1]" is null`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var r Request
			err := json.Unmarshal([]byte(tt.body), &r)
			var re *RequestError
			if !errors.As(err, &re) || re.Code != "invalid_messages" || !strings.HasPrefix(re.Message, tt.want) {
				t.Errorf("error %v, want invalid_messages starting %q", err, tt.want)
			}
		})
	}
	var r Request
	var te *json.UnmarshalTypeError
	if err := json.Unmarshal([]byte(`{"messages":"hi"}`), &r); !errors.As(err, &te) || te.Field != "messages" {
		t.Errorf("messages a string: %v, want a type error on field messages", err)
	}
	if err := json.Unmarshal([]byte(`{"messages":null}`), &r); err != nil || r.Messages != nil {
		t.Errorf("messages null: %v, %v", err, r.Messages)
	}
	if err := json.Unmarshal([]byte(`{"messages":[{"role":"user","content":"a"},{"role":"tool","content":"b"}]}`), &r); err != nil || len(r.Messages) != 2 || r.Messages[1].Role != RoleTool {
		t.Errorf("two turns: %v, %+v", err, r.Messages)
	}
}

// BenchmarkDecodeConversation decodes a request of 40 turns, half of them
// an assistant's with a tool call beside its text: what reading a
// router's conversation costs before any search.
func BenchmarkDecodeConversation(b *testing.B) {
	var turns []string
	for i := range 20 {
		turns = append(turns, fmt.Sprintf(`{"role":"user","content":"turn %d asks to open an issue about the login page"}`, i))
		turns = append(turns, `{"role":"assistant","content":[{"type":"text","text":"ok"},{"type":"tool_use","id":"t","name":"f","input":{}}]}`)
	}
	body := []byte(`{"messages":[` + strings.Join(turns, ",") + `]}`)
	b.ReportAllocs()
	for b.Loop() {
		var r Request
		if err := json.Unmarshal(body, &r); err != nil {
			b.Fatal(err)
		}
	}
}

// A role no API names is refused with every name that is taken, from the
// one table the decoder reads (RoleNames).
func TestUnknownRoleNamesTheOthers(t *testing.T) {
	var c Conversation
	if err := json.Unmarshal([]byte(`[{"role":"robot","content":"x"}]`), &c); err != nil {
		t.Fatal(err)
	}
	err := (&Request{Messages: c}).Validate()
	var re *RequestError
	if !errors.As(err, &re) || re.Code != "invalid_messages" {
		t.Fatalf("Validate = %v, want invalid_messages", err)
	}
	for _, name := range RoleNames() {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("%q does not name the role %s", err, name)
		}
	}
}

// FuzzContentParts: a turn's content, read in one pass, gives the text
// and the errors referenceValue gave, the reader it replaced, which
// decoded each part into a map of raw values with encoding/json. Content
// is fuzzed as the turn's reader passes it on: valid JSON without a
// repeated key.
func FuzzContentParts(f *testing.F) {
	for _, s := range []string{`"x"`, `null`, `[]`, `[1]`, `[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"u"}}]`,
		`[{"text":"g"},{"thought":true,"text":"t"},{"inlineData":{}},{"functionCall":{"name":"f"}}]`,
		`[{"type":"tool_result","content":[{"type":"text","text":"r"},{"type":"tool_result","content":"deep"}]},{"type":"text","text":"q"}]`,
		`[{"type":5}]`, `[{"type":null,"text":"n"}]`, `[{"type":"text"}]`, `[{"type":"text","text":7}]`, `[{"type":"text","text":null}]`,
		`[{"type":"input_text","text":"\u00e9\"\\"},{"typ\u0065":"output_text","te\u0078t":"esc"}]`, `[{"type":"tool_result","content":{"x":1}}]`,
		`[{"type":"tool_result","content":[{"type":"tool_result","content":[{"type":"tool_result","content":[{"type":"tool_result","content":[{"type":"tool_result","content":"x"}]}]}]}]}]`,
		`[{"thought":"true","text":"s"},{"thought":true ,"type":"text","text":"kept"}]`, `{"type":"text"}`, `5`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !jsontext.Value(data).IsValid() {
			return
		}
		field := fieldPath{2, "content"}
		var got, want turnText
		gotErr, wantErr := got.value(data, field, false, 0), want.referenceValue(data, field, false, 0)
		if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
			t.Fatalf("%s: error %v, want %v", data, gotErr, wantErr)
		}
		if gotErr == nil && (got.text() != want.text() || got.onlyResults() != want.onlyResults()) {
			t.Fatalf("%s: text %q (only results %v), want %q (%v)", data, got.text(), got.onlyResults(), want.text(), want.onlyResults())
		}
	})
}

// referenceValue is turnText.value as it was (encoding/json, a map a
// part), which FuzzContentParts holds the one-pass reader to.
func (t *turnText) referenceValue(raw json.RawMessage, field fieldPath, inResult bool, depth int) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return badRequest("invalid_messages", `%s is not a valid string`, field)
		}
		t.add(s, inResult)
		return nil
	case '[':
	default:
		return badRequest("invalid_messages", `%s must be a string or an array of parts, got %s`, field, jsonread.KindName(raw))
	}
	var parts []json.RawMessage
	if err := json.Unmarshal(raw, &parts); err != nil {
		return badRequest("invalid_messages", `%s is not a valid array`, field)
	}
	for i, part := range parts {
		var p map[string]json.RawMessage
		if part = bytes.TrimSpace(part); part[0] != '{' || json.Unmarshal(part, &p) != nil {
			return badRequest("invalid_messages", `part %d of %s must be an object, got %s`, i, field, jsonread.KindName(part))
		}
		var typ string
		if v, ok := p["type"]; ok && json.Unmarshal(v, &typ) != nil {
			return badRequest("invalid_messages", `part %d of %s: "type" must be a string`, i, field)
		}
		switch typ {
		case "", "text", "input_text", "output_text":
			// Gemini's parts have no type; a text part is the one with
			// text, and one marked "thought" is the model's reasoning.
			if typ == "" && string(bytes.TrimSpace(p["thought"])) == "true" {
				continue
			}
			v, ok := p["text"]
			if !ok {
				if typ == "" {
					continue // inlineData, functionCall, ...: not text
				}
				return badRequest("invalid_messages", `part %d of %s is of type %q but has no "text"`, i, field, typ)
			}
			var s string
			if err := json.Unmarshal(v, &s); err != nil {
				return badRequest("invalid_messages", `part %d of %s: "text" must be a string, got %s`, i, field, jsonread.KindName(v))
			}
			t.add(s, inResult)
		case "tool_result":
			if depth >= maxNesting {
				return badRequest("invalid_messages", `%s nests tool results over %d deep`, field, maxNesting)
			}
			if err := t.referenceValue(p["content"], field, true, depth+1); err != nil {
				return err
			}
		}
		// Any other type (image_url, image, input_audio, file, document,
		// tool_use, thinking, ...) carries no text a search reads.
	}
	return nil
}

// TestConversationWeighsEarlierTurns: a conversation that turns to a new
// task ranks the new task's tool first, by its own words (the last task's
// rarer words, read from the earlier turns at full weight, ranked the last
// task's tools above it); and a short turn that leans on the turns before
// it still finds its tool through them. Both ways of embedding a query:
// in-process, and through a provider, which is sent the ask and the
// earlier words in one request.
func TestConversationWeighsEarlierTurns(t *testing.T) {
	convs := []struct {
		earlier, said, ask string
		want               string
		within             int // the rank it must reach
	}{
		{"Run the statistical test on the A/B conversion numbers I uploaded.", "The two-sided t-test gives p = 0.031, so variant B converts better at the 5% level.",
			"great. now open a pull request from feature/checkout-v2 into main", "create_pull_request", 1},
		{"Which CI runs failed on main today?", "Two workflow runs failed on main: 'integration tests' at 10:14 and 'lint' at 13:02.",
			"set my status to 'out sick' until tomorrow", "set_status", 1},
		{"Take a backup of the billing database before the migration.", "The backup billing-2026-12-06.dump finished: 3.1 GB.",
			"compute the FFT of the vibration signal in sensor7.csv", "compute_fft", 1},
		// Leaning on the turns before: weighed at a fixed 0.3, the earlier
		// words lost "close it out" to set_out_of_office.
		// (Its semantic ranking alone, at this test's width, puts
		// get_ticket first.)
		{"Ticket WEB-412 is done, QA signed it off.", "Noted.", "close it out", "transition_ticket", 2},
	}
	embedders := map[string]func() Embedder{
		"local":    func() Embedder { return embedding.NewLocal(256) },
		"provider": func() Embedder { return &countingEmbedder{local: embedding.NewLocal(256)} },
	}
	for name, newEmbedder := range embedders {
		emb := newEmbedder()
		svc := New(Config{Embedder: emb, Version: "test"})
		if _, err := svc.Build(t.Context(), defaultSetup(t)); err != nil {
			t.Fatal(err)
		}
		for _, mode := range []Mode{ModeHybrid, ModeSemantic, ModeKeyword} {
			for _, c := range convs {
				t.Run(name+"/"+string(mode)+"/"+c.want, func(t *testing.T) {
					counting, _ := emb.(*countingEmbedder)
					var before int64
					if counting != nil {
						before = counting.texts.Load()
					}
					res := mustSearch(t, svc, Request{Mode: mode, IncludeCore: ptr(false), TopK: ptr(3), Messages: []Message{
						{Role: "user", Content: c.earlier}, {Role: "assistant", Content: c.said}, {Role: "user", Content: c.ask}}})
					if res.Degraded || !slices.ContainsFunc(res.Tools[:min(c.within, len(res.Tools))], func(h Hit) bool { return h.Name == c.want }) {
						t.Errorf("%q after %q ranked %v (degraded %v), want %s in the first %d", c.ask, c.earlier, ids(res.Tools), res.Degraded, c.want, c.within)
					}
					if counting != nil && mode == ModeHybrid { // then cached
						if n := counting.texts.Load() - before; n != 2 {
							t.Errorf("the provider was sent %d texts, want the ask and the earlier words", n)
						}
					}
				})
			}
		}
	}
}

// TestPastedThenAsked: a turn holding a pasted log, then in a paragraph of
// its own what to do with it, is ranked on what to do, the log its
// context; ranked on the log's last kilobyte as written, it found the
// log's database tools, and the ask's tool nowhere in the top 10. As a
// query (over 4 KB, so digested) the same.
func TestPastedThenAsked(t *testing.T) {
	svc := newService(t, nil)
	mustBuild(t, svc)
	var log strings.Builder
	for i := range 60 {
		fmt.Fprintf(&log, "2026-11-%02d 03:%02d:11 ERROR postgres connection pool exhausted; query timeout after 30s on table orders (slow query)\n", 1+i%28, i)
	}
	for _, ask := range []struct{ text, want string }{
		{"Please post a summary of this in the #incidents slack channel", "slack/post_message"},
		{"open a jira ticket for the on-call team about these errors", "jira/create_ticket"},
	} {
		text := log.String() + "\n" + ask.text
		for _, req := range []Request{
			{Messages: []Message{{Role: "user", Content: text}}},
			{Query: text},
		} {
			req.TopK, req.IncludeCore = ptr(5), ptr(false)
			if res := mustSearch(t, svc, req); rankOf(res.Tools, ask.want) == 0 {
				t.Errorf("%q after a pasted log (query %v) ranked %v, want %s in the first 5", ask.text, req.Query != "", ids(res.Tools), ask.want)
			}
		}
	}
}
