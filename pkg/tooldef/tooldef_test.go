package tooldef

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/toolsearch/toolsearch/pkg/catalog"
)

var tool = catalog.Tool{
	Server:      "github",
	Name:        "create_issue",
	Title:       "Create issue",
	Description: "Open an issue.",
	Schemas: catalog.MakeSchemas([]byte(`{"type":"object","properties":{"title":{"type":"string"}},"required":["title"],"additionalProperties":false,"$schema":"http://json-schema.org/draft-07/schema#"}`),
		[]byte(`{"type":"object"}`), []byte(`{"readOnlyHint":false}`)),
}

// render is Render's definition as JSON and its warning.
func render(format string, t catalog.Tool, name string) (json.RawMessage, string, error) {
	d, err := Render(format, t, t.Schemas.Annotations(), name)
	return d.JSON, d.Warning, err
}

func decode(t *testing.T, raw json.RawMessage) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// The documented shapes: OpenAI Chat Completions and Responses tools,
// Anthropic Messages tools, Gemini functionDeclarations, MCP Tool.
func TestRenderShapes(t *testing.T) {
	schema := map[string]any{}
	json.Unmarshal(tool.Schemas.Input(), &schema)
	tests := []struct {
		format string
		want   map[string]any
	}{
		{"openai", map[string]any{"type": "function", "function": map[string]any{"name": "create_issue", "description": "Open an issue.", "parameters": schema}}},
		{"openai_responses", map[string]any{"type": "function", "name": "create_issue", "description": "Open an issue.", "parameters": schema, "strict": false}},
		{"anthropic", map[string]any{"name": "create_issue", "description": "Open an issue.", "input_schema": schema}},
		{"gemini", map[string]any{"name": "create_issue", "description": "Open an issue.", "parameters": map[string]any{
			"type": "object", "properties": map[string]any{"title": map[string]any{"type": "string"}}, "required": []any{"title"}}}},
		{"mcp", map[string]any{"name": "create_issue", "title": "Create issue", "description": "Open an issue.", "inputSchema": schema,
			"outputSchema": map[string]any{"type": "object"}, "annotations": map[string]any{"readOnlyHint": false}}},
	}
	for _, tt := range tests {
		raw, _, err := render(tt.format, tool, "create_issue")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tt.want, decode(t, raw)); diff != "" {
			t.Errorf("Render(%s) mismatch (-want +got):\n%s", tt.format, diff)
		}
	}
	// No schema: OpenAI and Anthropic still get an object schema; Gemini none.
	bare := catalog.Tool{Server: "s", Name: "ping"}
	for format, key := range map[string]string{"openai": "function", "openai_responses": "parameters", "anthropic": "input_schema"} {
		raw, _, _ := render(format, bare, "ping")
		if !strings.Contains(string(raw), `{"type":"object","properties":{}}`) {
			t.Errorf("Render(%s, no schema) = %s, want an empty object schema under %s", format, raw, key)
		}
	}
	if raw, _, _ := render("gemini", bare, "ping"); strings.Contains(string(raw), "parameters") {
		t.Errorf("Render(gemini, no schema) = %s, want parameters unset", raw)
	}
}

var providerName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_-]{0,63}$`)

func TestNamer(t *testing.T) {
	var n Namer
	tools := []catalog.Tool{
		{Server: "github", Name: "create_issue"},
		{Server: "gitlab", Name: "create_issue"},
		{Server: "rapid api", Name: "/v1/nutrition"},
		{Server: "x", Name: "Get Channel Clips"},
		{Server: "x", Name: strings.Repeat("very_long_name_", 10)},
		{Server: "y", Name: strings.Repeat("very_long_name_", 10)},
		{Server: "z", Name: "9lives"},
	}
	seen := map[string]bool{}
	var got []string
	for _, tl := range tools {
		name := n.Name(tl)
		if !providerName.MatchString(name) {
			t.Errorf("Name(%s) = %q, not a valid provider function name", tl.ID(), name)
		}
		if seen[name] {
			t.Errorf("Name(%s) = %q, already used", tl.ID(), name)
		}
		seen[name] = true
		got = append(got, name)
	}
	if got[0] != "create_issue" || got[1] != "gitlab_create_issue" {
		t.Errorf("names = %q: a valid unused name must pass through, a clash gets the server prefix", got[:2])
	}
}

func TestGeminiSchema(t *testing.T) {
	in := `{
		"$schema": "http://json-schema.org/draft-07/schema#",
		"type": "object",
		"additionalProperties": false,
		"$defs": {"Addr": {"type": "object", "properties": {"city": {"type": "string"}}}},
		"properties": {
			"home": {"$ref": "#/$defs/Addr", "description": "Where they live"},
			"kind": {"const": "person"},
			"level": {"type": "integer", "enum": [1, 2, 3]},
			"nick": {"type": ["string", "null"]},
			"shape": {"oneOf": [{"type": "string"}, {"type": "number"}]},
			"ext": {"$ref": "https://example.com/schema.json"},
			"self": {"$ref": "#"}
		},
		"required": ["kind", "ghost"]
	}`
	got, _, err := GeminiSchema(json.RawMessage(in))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(got)
	s := string(b)
	for _, banned := range []string{"$schema", "additionalProperties", "$defs", "$ref", "oneOf", "const", "ghost"} {
		if strings.Contains(s, banned) {
			t.Errorf("GeminiSchema kept %q: %s", banned, s)
		}
	}
	props := got["properties"].(map[string]any)
	if home := props["home"].(map[string]any); home["description"] != "Where they live" || home["properties"] == nil {
		t.Errorf("$ref not inlined: %v", home)
	}
	if kind := props["kind"].(map[string]any); !cmp.Equal(kind["enum"], []any{"person"}) {
		t.Errorf("const not an enum: %v", kind)
	}
	if lvl := props["level"].(map[string]any); lvl["enum"] != nil || !strings.Contains(lvl["description"].(string), "one of [1 2 3]") {
		t.Errorf("integer enum: %v", lvl)
	}
	if nick := props["nick"].(map[string]any); nick["type"] != "string" || nick["nullable"] != true {
		t.Errorf("nullable: %v", nick)
	}
	if shape := props["shape"].(map[string]any); shape["anyOf"] == nil {
		t.Errorf("oneOf: %v", shape)
	}
	if !cmp.Equal(got["required"], []any{"kind"}) {
		t.Errorf("required = %v, want the unknown name dropped", got["required"])
	}
}

func TestQualified(t *testing.T) {
	long := strings.Repeat("x", 70)
	tests := []struct {
		tool catalog.Tool
		want string
	}{
		{catalog.Tool{Server: "github", Name: "create_issue"}, "github__create_issue"},
		{catalog.Tool{Server: "my server", Name: "get.thing"}, "my_server__get_thing_"},
		{catalog.Tool{Server: "s", Name: long}, "s__" + long[:maxNameLen-len("_01234567")-len("s__")]},
	}
	for _, tt := range tests {
		got := Qualified(tt.tool)
		if !strings.HasPrefix(got, tt.want) || len(got) > maxNameLen || got != sanitize(got) {
			t.Errorf("Qualified(%s) = %q, want a valid name starting %q", tt.tool.ID(), got, tt.want)
		}
	}
	for _, pair := range [][2]catalog.Tool{
		{{Server: "a.b", Name: "c"}, {Server: "a_b", Name: "c"}},   // names that sanitise alike
		{{Server: "a__b", Name: "c"}, {Server: "a", Name: "b__c"}}, // the separator inside a server
		{{Server: "a_", Name: "b"}, {Server: "a", Name: "_b"}},     // a server ending in "_"
		{{Server: "slack", Name: "admin__x"}, {Server: "slack__admin", Name: "x"}},
	} {
		if x, y := Qualified(pair[0]), Qualified(pair[1]); x == y {
			t.Errorf("%s and %s share the qualified name %q", pair[0].ID(), pair[1].ID(), x)
		}
	}
}

// TestGeminiTypesAndFormats: Gemini refuses a schema without a type and a
// format it has not for the type; each is mended, and said.
func TestGeminiTypesAndFormats(t *testing.T) {
	tests := []struct {
		prop    string
		want    map[string]any
		warning string
	}{
		{`{"type":"string","format":"date-time"}`, map[string]any{"type": "string", "format": "date-time"}, ""},
		{`{"type":"integer","format":"int64"}`, map[string]any{"type": "integer", "format": "int64"}, ""},
		{`{"type":"string","format":"uri","description":"Page."}`, map[string]any{"type": "string", "description": "Page. (format: uri)"}, ""},
		{`{"type":"number","format":"int32"}`, map[string]any{"type": "number", "description": "(format: int32)"}, ""},
		{`{"enum":["a","b"]}`, map[string]any{"type": "string", "enum": []any{"a", "b"}, "format": "enum"}, ""},
		{`{"const":"x"}`, map[string]any{"type": "string", "enum": []any{"x"}}, ""},
		{`{"properties":{"a":{"type":"string"}}}`, map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "string"}}}, ""},
		{`{"items":{"type":"string"}}`, map[string]any{"type": "array", "items": map[string]any{"type": "string"}}, ""},
		{`{"description":"Anything."}`, map[string]any{"type": "string", "description": "Anything."}, `1 schema without a type given "string"`},
		{`{"anyOf":[{"type":"string"},{"description":"x"}]}`, map[string]any{"anyOf": []any{map[string]any{"type": "string"}, map[string]any{"type": "string", "description": "x"}}}, `1 schema without a type`},
	}
	for _, tt := range tests {
		got, warning, err := GeminiSchema(json.RawMessage(`{"type":"object","properties":{"p":` + tt.prop + `}}`))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tt.want, got["properties"].(map[string]any)["p"]); diff != "" {
			t.Errorf("%s: mismatch (-want +got):\n%s", tt.prop, diff)
		}
		if !strings.Contains(warning, tt.warning) || tt.warning == "" && warning != "" {
			t.Errorf("%s: warning %q, want %q", tt.prop, warning, tt.warning)
		}
	}
}

// TestOpenAIDescriptionLimit: OpenAI refuses a request with a function
// description over 1,024 characters (UTF-16 units), so a longer one is
// clipped there, and said; other formats keep it whole.
func TestOpenAIDescriptionLimit(t *testing.T) {
	tests := []struct {
		name, desc string
		clipped    bool
	}{
		{"at the limit", strings.Repeat("a", 1024), false},
		{"words over it", strings.Repeat("word ", 300), true},
		{"one long word", strings.Repeat("x", 3000), true},
		{"astral characters count two", strings.Repeat("😀", 513), true},
		{"astral characters at the limit", strings.Repeat("😀", 512), false},
		{"accents count one", strings.Repeat("é", 1024), false},
		{"invalid bytes at the cut, each a unit", strings.Repeat("x", 1020) + "\xff\xff\xff\xff\xff" + strings.Repeat("y", 10), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tl := catalog.Tool{Server: "s", Name: "t", Description: tt.desc}
			raw, warning, err := render("openai", tl, "t")
			if err != nil {
				t.Fatal(err)
			}
			var def struct{ Function struct{ Description string } }
			if err := json.Unmarshal(raw, &def); err != nil {
				t.Fatal(err)
			}
			got := def.Function.Description
			if n := utf16Len(got); n > 1024 || !utf8.ValidString(got) {
				t.Errorf("description of %d units (valid UTF-8: %v)", n, utf8.ValidString(got))
			}
			if clipped := got != tt.desc; clipped != tt.clipped || clipped != strings.Contains(warning, "over the 1024 OpenAI takes") {
				t.Errorf("clipped %v, warning %q; want clipped %v", clipped, warning, tt.clipped)
			}
			// As JSON carries it: each invalid byte as U+FFFD, as []rune reads it.
			if tt.clipped && (!strings.HasSuffix(got, "…") || !strings.HasPrefix(string([]rune(tt.desc)), strings.TrimSuffix(got, "…"))) {
				t.Errorf("clipped to %.40q…, not a prefix and a mark", got)
			}
			raw, _, _ = render("anthropic", tl, "t")
			if utf8.ValidString(tt.desc) && !strings.Contains(string(raw), tt.desc) {
				t.Error("anthropic's description was clipped")
			}
		})
	}
}
