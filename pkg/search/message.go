package search

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/toolsearch/toolsearch/pkg/internal/jsonread"
	"github.com/toolsearch/toolsearch/pkg/jsonkeys"
	"github.com/toolsearch/toolsearch/pkg/redact"
)

// A router keeps its conversation in its model API's own shape, and
// should not have to flatten it for a search: a turn is read as OpenAI's
// and Ollama's chat APIs write it (content a string, null, or an array of
// parts; tool calls and their results beside), as Anthropic's Messages
// API does (content blocks, tool results inside a user turn), and as
// Gemini's does ("parts", role "model"), and as items of OpenAI's
// Responses API (below). Only text is read; images,
// audio, files, tool calls and reasoning are skipped. Keys none of these
// APIs define are still errors.

// RoleTool is the role of a turn that carries only tools' output: a
// tool's (OpenAI, Ollama) or function's turn, or a user turn that holds
// nothing but tool results (Anthropic). Like an assistant's, it is
// context and never the request.
const RoleTool = "tool"

// roles maps each API's role names to the service's.
var roles = map[string]string{
	"user": "user", "assistant": "assistant", "system": "system",
	"developer": "system",    // OpenAI's system turns since o1
	"model":     "assistant", // Gemini
	"tool":      RoleTool, "function": RoleTool, "ipython": RoleTool,
}

// RoleNames are the role names a turn may have: the service's four and
// the other chat APIs' names for them, sorted.
func RoleNames() []string { return slices.Sorted(maps.Keys(roles)) }

// roleAliases are the other APIs' names, for an error.
var roleAliases = func() string {
	var out []string
	for _, name := range RoleNames() {
		if roles[name] != name {
			out = append(out, name)
		}
	}
	return strings.Join(out, ", ")
}()

// messageKeys are the keys a turn may have: those read, then those the
// chat APIs define that carry nothing a search reads (OpenAI's, Ollama's,
// and the reasoning and prefix keys of OpenAI-compatible servers:
// DeepSeek, vLLM, OpenRouter, Mistral).
var messageKeys = []string{"role", "content", "parts", "type",
	"name", "tool_calls", "tool_call_id", "function_call", "refusal", "audio", "annotations", "images", "thinking", "tool_name",
	"reasoning_content", "reasoning", "reasoning_details", "prefix"}

// itemKeys are what a message item of OpenAI's Responses API has beside
// a turn's keys (a "type" of "message" says it is one).
var itemKeys = []string{"id", "status"}

// A turn may also be an item of OpenAI's Responses API, which a router
// on that API holds as its conversation: a message item is a turn; a
// tool's output is a tool's turn, its "output" read as a turn's content;
// a call, reasoning or a reference carries no text a search reads and is
// an assistant's turn without text, as a chat turn holding only tool
// calls is. The keys of items other than messages are the API's own and
// not checked: only "output" is read.
const (
	itemOutput = iota + 1
	itemSilent
)

var itemTypes = map[string]int{
	"function_call_output": itemOutput, "custom_tool_call_output": itemOutput, "computer_call_output": itemOutput,
	"local_shell_call_output": itemOutput, "shell_call_output": itemOutput, "apply_patch_call_output": itemOutput,
	"mcp_call":      itemOutput, // a remote MCP tool's call and its output, in one item
	"function_call": itemSilent, "custom_tool_call": itemSilent, "computer_call": itemSilent, "local_shell_call": itemSilent,
	"shell_call": itemSilent, "apply_patch_call": itemSilent, "reasoning": itemSilent, "file_search_call": itemSilent,
	"web_search_call": itemSilent, "image_generation_call": itemSilent, "code_interpreter_call": itemSilent,
	"mcp_list_tools": itemSilent, "mcp_approval_request": itemSilent, "mcp_approval_response": itemSilent,
	"item_reference": itemSilent, "compaction": itemSilent,
}

// itemTypeNames are the item types read, in short, for an error: the
// whole list would be most of it.
const itemTypeNames = "message, function_call, function_call_output, reasoning, item_reference, and the API's other tool calls and their outputs"

// Conversation is a request's turns, newest last.
type Conversation []Message

// UnmarshalJSON reads each turn as Message does, and names the turn an
// error is about: in a router's forty turns, "a turn's content" does not
// say which.
func (c *Conversation) UnmarshalJSON(data []byte) error {
	d := jsonread.Get(data)
	defer d.Put()
	if d.PeekKind() != '[' {
		return json.Unmarshal(data, (*[]Message)(c)) // null, or encoding/json's own type error
	}
	if _, err := d.ReadToken(); err != nil {
		return malformedTurn
	}
	*c = (*c)[:0]
	for i := 0; d.PeekKind() != ']'; i++ {
		raw, err := d.ReadValue()
		if err != nil {
			return malformedTurn
		}
		*c = append(*c, Message{})
		if err := (*c)[i].decode(raw, turnPath(i)); err != nil {
			return err
		}
	}
	return nil
}

// turnPath is how errors name turn i of a request's messages; a turn
// read alone (-1) is "a turn".
type turnPath int

func (p turnPath) String() string {
	if p < 0 {
		return `a turn of "messages"`
	}
	return fmt.Sprintf(`"messages[%d]"`, int(p))
}

// fieldPath names a field of a turn: "messages[1].content", or a turn's
// "content". It is formatted only for an error.
type fieldPath struct {
	turn turnPath
	name string
}

func (f fieldPath) String() string {
	if f.turn < 0 {
		return fmt.Sprintf(`a turn's %q`, f.name)
	}
	return fmt.Sprintf(`"messages[%d].%s"`, int(f.turn), f.name)
}

// UnmarshalJSON reads a turn in any of the shapes above into Role and
// Content, in one pass over its bytes. A role it does not know is kept as
// written, for the request's check to refuse by name.
func (m *Message) UnmarshalJSON(data []byte) error { return m.decode(data, -1) }

func (m *Message) decode(data []byte, at turnPath) error {
	d := jsonread.Get(data)
	defer d.Put()
	switch d.PeekKind() {
	case '{':
	case 'n':
		return badRequest("invalid_messages", `%s is null; want {"role", "content"}`, at)
	default:
		return badRequest("invalid_messages", `%s must be an object {"role", "content"}, got %s`, at, jsonread.KindName(data))
	}
	if _, err := d.ReadToken(); err != nil {
		return malformedTurn
	}
	var t, output turnText
	hasRole := false
	var item, unknown, unknownInItem string // the item's type; the first key no turn has, and one only an item has
	hasType, hasOutput := false, false
	for d.PeekKind() != '}' {
		name, err := readName(d)
		if err != nil {
			return malformedTurn
		}
		switch string(name) {
		case "role":
			role, err := readString(d, fieldPath{at, "role"})
			if err != nil {
				return err
			}
			m.Role, hasRole = role, true
		case "content", "parts":
			field := "content"
			if string(name) == "parts" {
				field = "parts"
			}
			if d.PeekKind() == '"' {
				tok, err := d.ReadToken()
				if err != nil {
					return malformedTurn
				}
				t.add(tok.String(), false)
				continue
			}
			v, err := d.ReadValue()
			if err != nil {
				return malformedTurn
			}
			if err := t.read(json.RawMessage(v), fieldPath{at, field}); err != nil {
				return err
			}
		case "type":
			typ, err := readString(d, fieldPath{at, "type"})
			if err != nil {
				return err
			}
			item, hasType = typ, true
		case "output":
			// A tool's output: a string or parts; a computer's screenshot
			// (an object) has no text.
			v, err := d.ReadValue()
			if err != nil {
				return malformedTurn
			}
			hasOutput = true
			if k := v.Kind(); k == '"' || k == '[' {
				if err := output.read(json.RawMessage(v), fieldPath{at, "output"}); err != nil {
					return err
				}
			}
		default:
			switch key := string(name); {
			case slices.Contains(messageKeys, key):
			case slices.Contains(itemKeys, key):
				unknownInItem = cmp.Or(unknownInItem, key)
			default:
				unknown = cmp.Or(unknown, key)
			}
			if err := d.SkipValue(); err != nil {
				return malformedTurn
			}
		}
	}
	if _, err := d.ReadToken(); err != nil {
		return malformedTurn
	}
	if hasType && item != "message" {
		switch itemTypes[item] {
		case itemOutput:
			m.Role, m.Content = RoleTool, output.text()
			return nil
		case itemSilent:
			m.Role, m.Content = "assistant", ""
			return nil
		}
		return badRequest("invalid_messages", `%s: "type" %q is not an item of OpenAI's Responses API this service reads: %s`,
			at, redact.Clip(item, redact.MaxEcho, "…"), itemTypeNames)
	}
	if !hasType {
		unknown = cmp.Or(unknown, unknownInItem) // "id" and "status" are an item's
	}
	if hasOutput {
		unknown = cmp.Or(unknown, "output") // a tool output item's
	}
	if unknown != "" {
		key := redact.Clip(unknown, redact.MaxEcho, "…") // a caller's key may be the whole body
		return badRequest("invalid_messages", `%s: %v`, at, jsonkeys.Unknown(key, messageKeys))
	}
	if !hasRole {
		return badRequest("invalid_messages", `%s has no "role"`, at)
	}
	if r, ok := roles[m.Role]; ok {
		m.Role = r
	}
	m.Content = t.text()
	if m.Role == "user" && t.onlyResults() {
		m.Role = RoleTool
	}
	return nil
}

// readName reads an object member's name: its bytes in place, unquoted
// only when it has escapes.
func readName(d *jsonread.Decoder) ([]byte, error) {
	raw, err := d.ReadValue()
	if err != nil {
		return nil, err
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		return raw[1 : len(raw)-1], nil
	}
	return jsontext.AppendUnquote(nil, raw)
}

// readString reads the string value of field, which must be one.
func readString(d *jsonread.Decoder, field fieldPath) (string, error) {
	if d.PeekKind() != '"' {
		return "", badRequest("invalid_messages", `%s must be a string`, field)
	}
	tok, err := d.ReadToken()
	if err != nil {
		return "", malformedTurn
	}
	return tok.String(), nil
}

// malformedTurn is a turn jsontext cannot read, which encoding/json, which
// checks a request's syntax before it calls UnmarshalJSON, never passes.
var malformedTurn = badRequest("invalid_messages", `a turn of "messages" is not valid JSON, or repeats a key`)

// turnText gathers a turn's text, and whether it came from tool results
// alone (Anthropic's tool_result blocks: the turn is a tool's, whatever
// its role). One text, a plain turn's content, is kept as it came.
type turnText struct {
	first          string
	b              strings.Builder
	texts, results int
}

func (t *turnText) onlyResults() bool { return t.texts == 0 && t.results > 0 }

func (t *turnText) add(s string, fromResult bool) {
	if s == "" {
		return
	}
	switch {
	case t.texts+t.results == 0:
		t.first = s
	case t.b.Len() == 0:
		t.b.WriteString(t.first)
		fallthrough
	default:
		t.b.WriteByte('\n')
		t.b.WriteString(s)
	}
	if fromResult {
		t.results++
	} else {
		t.texts++
	}
}

// text is what was gathered, one text per line.
func (t *turnText) text() string {
	if t.b.Len() > 0 {
		return t.b.String()
	}
	return t.first
}

// read adds the text of a content value: a string, null, or an array of
// parts; field is how errors name it.
func (t *turnText) read(raw json.RawMessage, field fieldPath) error {
	return t.value(raw, field, false, 0)
}

// maxNesting bounds tool results inside tool results.
const maxNesting = 4

func (t *turnText) value(raw json.RawMessage, field fieldPath, inResult bool, depth int) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	// Read in one pass, in place (jsonread): decoding each part into a
	// map of raw values, then each value again, allocated 48 bytes for
	// each byte of a turn of 37,000 one-letter parts, and took 86 ms a
	// megabyte. The turn's reader validated these bytes already.
	d := jsonread.Get(raw)
	defer d.Put()
	switch d.PeekKind() {
	case '"':
		tok, err := d.ReadToken()
		if err != nil {
			return badRequest("invalid_messages", `%s is not a valid string`, field)
		}
		t.add(tok.String(), inResult)
		return nil
	case '[':
	default:
		return badRequest("invalid_messages", `%s must be a string or an array of parts, got %s`, field, jsonread.KindName(raw))
	}
	if _, err := d.ReadToken(); err != nil {
		return badRequest("invalid_messages", `%s is not a valid array`, field)
	}
	for i := 0; d.PeekKind() != ']'; i++ {
		if d.PeekKind() != '{' {
			v, _ := d.ReadValue()
			return badRequest("invalid_messages", `part %d of %s must be an object, got %s`, i, field, jsonread.KindName(v))
		}
		p, err := readPart(d)
		switch {
		case err != nil:
			return malformedTurn
		case p.badType:
			return badRequest("invalid_messages", `part %d of %s: "type" must be a string`, i, field)
		}
		switch p.typ {
		case "", "text", "input_text", "output_text":
			// Gemini's parts have no type; a text part is the one with
			// text, and one marked "thought" is the model's reasoning.
			if p.typ == "" && p.thought {
				continue
			}
			switch p.textKind {
			case 0:
				if p.typ == "" {
					continue // inlineData, functionCall, ...: not text
				}
				return badRequest("invalid_messages", `part %d of %s is of type %q but has no "text"`, i, field, p.typ)
			case '"':
				t.add(p.text, inResult)
			case 'n':
			default:
				return badRequest("invalid_messages", `part %d of %s: "text" must be a string, got %s`, i, field, jsonread.KindName(p.textRaw))
			}
		case "tool_result":
			if depth >= maxNesting {
				return badRequest("invalid_messages", `%s nests tool results over %d deep`, field, maxNesting)
			}
			if err := t.value(json.RawMessage(p.content), field, true, depth+1); err != nil {
				return err
			}
		}
		// Any other type (image_url, image, input_audio, file, document,
		// tool_use, thinking, ...) carries no text a search reads.
	}
	return nil
}

// part is what a content part has that a search reads.
type part struct {
	typ      string
	badType  bool // "type" is neither a string nor null
	thought  bool
	text     string
	textKind jsontext.Kind // 0 when the part has no "text"
	textRaw  jsontext.Value
	content  jsontext.Value // in place
}

// readPart reads the object d is at: a part.
func readPart(d *jsonread.Decoder) (part, error) {
	var p part
	if _, err := d.ReadToken(); err != nil {
		return p, err
	}
	for d.PeekKind() != '}' {
		name, err := readName(d)
		if err != nil {
			return p, err
		}
		switch kind := d.PeekKind(); string(name) {
		case "type", "text":
			if kind != '"' {
				v, err := d.ReadValue()
				if err != nil {
					return p, err
				}
				if string(name) == "type" {
					p.badType = kind != 'n'
				} else {
					p.textKind, p.textRaw = kind, v
				}
				continue
			}
			tok, err := d.ReadToken()
			if err != nil {
				return p, err
			}
			if string(name) == "type" {
				p.typ = tok.String()
			} else {
				p.text, p.textKind = tok.String(), kind
			}
		case "thought":
			v, err := d.ReadValue()
			if err != nil {
				return p, err
			}
			p.thought = string(v) == "true"
		case "content":
			if p.content, err = d.ReadValue(); err != nil {
				return p, err
			}
		default:
			if err := d.SkipValue(); err != nil {
				return p, err
			}
		}
	}
	_, err := d.ReadToken()
	return p, err
}
