package tooldef

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolsearch/toolsearch/pkg/catalog"
)

func TestMend(t *testing.T) {
	tests := []struct {
		name, schema string
		want         string   // "": the schema unchanged
		notes        []string // in the warning; none: no warning
	}{
		{name: "valid", schema: `{"type":"object","properties":{"q":{"type":"string"},"n":{"type":["integer","null"]},"tags":{"type":"array","items":{"type":"string"}},"pair":{"type":"array","prefixItems":[{"type":"string"}]}},"required":["q"]}`},
		{name: "names that are keywords, and data that looks like schemas",
			schema: `{"type":"object","properties":{"type":{"type":"string"},"items":{"type":"object","default":{"type":"foo"},"enum":[{"type":"array"}],"examples":[{"required":[1]}]},"required":{"const":{"type":"list"}}}}`},
		{name: "boolean schemas", schema: `{"type":"object","properties":{"a":true,"b":false},"additionalProperties":false}`},
		{name: "an array without items",
			schema: `{"type":"object","properties":{"tags":{"type":"array","description":"Labels."}}}`,
			want:   `{"type":"object","properties":{"tags":{"type":"array","description":"Labels.","items":{}}}}`,
			notes:  []string{`/properties/tags: an array without "items", given "items": {}`}},
		{name: "a nullable array without items, in a union",
			schema: `{"type":"object","properties":{"box":{"anyOf":[{"type":["array","null"]},{"type":"string"}]}}}`,
			want:   `{"type":"object","properties":{"box":{"anyOf":[{"type":["array","null"],"items":{}},{"type":"string"}]}}}`,
			notes:  []string{`/properties/box/anyOf/0: an array without "items"`}},
		{name: "type names from code",
			schema: `{"type":"object","properties":{"a":{"type":"str"},"b":{"type":"int"},"c":{"type":"float"},"d":{"type":"bool"},"e":{"type":"dict"},"f":{"type":"String"}}}`,
			want:   `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"},"c":{"type":"number"},"d":{"type":"boolean"},"e":{"type":"object"},"f":{"type":"string"}}}`,
			notes:  []string{`/properties/a: type "str" is not JSON Schema's, written "string"`, `/properties/b: type "int"`, `/properties/c: type "float"`, "and 3 more"}},
		{name: "a list read as an array needs items too",
			schema: `{"type":"object","properties":{"l":{"type":"list"}}}`,
			want:   `{"type":"object","properties":{"l":{"type":"array","items":{}}}}`,
			notes:  []string{`type "list" is not JSON Schema's, written "array"`, `/properties/l: an array without "items"`}},
		{name: "an unknown type is left out",
			schema: `{"type":"object","properties":{"a":{"type":"foo","description":"x"},"b":{"type":5},"c":{"type":[]}}}`,
			want:   `{"type":"object","properties":{"a":{"description":"x"},"b":{},"c":{}}}`,
			notes:  []string{`/properties/a: type "foo" is not JSON Schema's, left out (any value)`, `/properties/b: type 5`, `/properties/c: type []`}},
		{name: "a list of types, mended",
			schema: `{"type":"object","properties":{"a":{"type":["str","null","x","string"]}}}`,
			want:   `{"type":"object","properties":{"a":{"type":["string","null"]}}}`,
			notes:  []string{`/properties/a: type ["str","null","x","string"] is not JSON Schema's, written ["string","null"]`}},
		{name: "no type at the top",
			schema: `{"properties":{"w":{"type":"integer"}}}`,
			want:   `{"type":"object","properties":{"w":{"type":"integer"}}}`,
			notes:  []string{`/: no "type" at the top, given "object"`}},
		{name: "a top-level type that is not object is named, not mended",
			schema: `{"type":"string"}`,
			notes:  []string{`/: the top-level type is not "object"`}},
		{name: "required with more than names",
			schema: `{"type":"object","properties":{"y":{"type":"string"}},"required":[true,"y",null]}`,
			want:   `{"type":"object","properties":{"y":{"type":"string"}},"required":["y"]}`,
			notes:  []string{`/: "required" holds 2 entries that are not names, left out`}},
		{name: "required that is not a list",
			schema: `{"type":"object","properties":{"y":{"type":"string"}},"required":"y"}`,
			want:   `{"type":"object","properties":{"y":{"type":"string"}}}`,
			notes:  []string{`/: "required" "y" is not a list of names, left out`}},
		{name: "type names where schemas go",
			schema: `{"type":"object","properties":{"n":"int","m":7,"u":{"anyOf":["string",{"type":"object"}]}}}`,
			want:   `{"type":"object","properties":{"n":{"type":"integer"},"m":{},"u":{"anyOf":[{"type":"string"},{"type":"object"}]}}}`,
			notes:  []string{`/properties/n: "int" is not a schema, written {"type":"integer"}`, `/properties/m: 7 is not a schema, written {}`, `/properties/u/anyOf/0: "string" is not a schema`}},
		{name: "a top-level oneOf of objects",
			schema: `{"type":"object","properties":{"id":{"type":"string"}},"required":["id"],"oneOf":[{"properties":{"start":{"type":"string"},"all_day":{"type":"boolean"}},"required":["start","all_day"]},{"properties":{"start":{"type":"integer"},"end":{"type":"str"}},"required":["start"]}]}`,
			want:   `{"type":"object","properties":{"id":{"type":"string"},"start":{"type":"string"},"all_day":{"type":"boolean"},"end":{"type":"string"}},"required":["id","start"]}`,
			notes:  []string{`/oneOf/1/properties/end: type "str"`, `/: top-level oneOf read as the properties of its schemas, required where all of them require it`}},
		{name: "a top-level anyOf of required lists, allOf of $refs, enum and not",
			schema: `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}},"anyOf":[{"required":["a"]},{"required":["b"]}],"allOf":[{"$ref":"#/$defs/c"}],"$defs":{"c":{"properties":{"c":{"type":"number"}},"required":["c"]}},"not":{"required":["x"]},"enum":[{}]}`,
			want:   `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"},"c":{"type":"number"}},"required":["c"],"$defs":{"c":{"properties":{"c":{"type":"number"}},"required":["c"]}}}`,
			notes:  []string{`/: top-level anyOf, allOf, not, enum read as`}},
		{name: "combinators below the top stay", schema: `{"type":"object","properties":{"v":{"oneOf":[{"type":"string"},{"type":"integer"}]}}}`},
		{name: "properties that are not an object",
			schema: `{"type":"object","properties":["a"],"allOf":{}}`,
			want:   `{"type":"object"}`,
			notes:  []string{`/properties: ["a"] is not an object of schemas, left out`, `/allOf: {} is not a list of schemas, left out`}},
		{name: "definitions, tuples and escaped names are schemas too",
			schema: `{"type":"object","$defs":{"p":{"type":"tuple","items":[{"type":"bool"}]}},"properties":{"a~b/c":{"typ\u0065":"str"}}}`,
			want:   `{"type":"object","$defs":{"p":{"type":"array","items":[{"type":"boolean"}]}},"properties":{"a~b/c":{"type":"string"}}}`,
			notes:  []string{`/$defs/p: type "tuple"`, `/$defs/p/items/0: type "bool"`, `/properties/a~0b~1c: type "str"`}},
		{name: "numbers and other keys kept as written",
			schema: `{"properties":{"n":{"type":"integer","maximum":12345678901234567890,"x-html":"<b>&"}}}`,
			want:   `{"type":"object","properties":{"n":{"type":"integer","maximum":12345678901234567890,"x-html":"<b>&"}}}`,
			notes:  []string{`no "type" at the top`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, warning := Mend(json.RawMessage(tt.schema))
			if tt.want == "" {
				if string(got) != tt.schema {
					t.Errorf("Mend changed a schema it should have left:\n got %s", got)
				}
			} else if diff := cmp.Diff(jsonValue(t, tt.want), jsonValue(t, string(got))); diff != "" {
				t.Errorf("Mend mismatch (-want +got):\n%s", diff)
			}
			if len(tt.notes) == 0 && warning != "" {
				t.Errorf("warning %q, want none", warning)
			}
			for _, n := range tt.notes {
				if !strings.Contains(warning, n) {
					t.Errorf("warning %q lacks %q", warning, n)
				}
			}
			// Mended, nothing is left to mend.
			for _, f := range faults(got) {
				if f.kind != rootNotObj {
					t.Errorf("mended schema %s still has %s: %s", got, f.at, f.note)
				}
			}
		})
	}
}

func jsonValue(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return v
}

// TestMendBoundsItsWarning: an upstream's schema of many faults, under a
// long property name, makes a warning of bounded size.
func TestMendBoundsItsWarning(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{`)
	for i := range 1000 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"` + strings.Repeat("x", 10000) + string(rune('a'+i%26)) + strings.Repeat("y", i) + `":{"type":"` + strings.Repeat("z", 5000) + `"}`)
	}
	b.WriteString(`}}`)
	got, warning := Mend(json.RawMessage(b.String()))
	if len(warning) > 1024 || !strings.Contains(warning, "and 997 more") {
		t.Errorf("warning of %d bytes: %.300q…", len(warning), warning)
	}
	if !json.Valid(got) || strings.Contains(string(got), "zzz") {
		t.Errorf("the unknown types were not left out")
	}
}

// TestRenderMends: every format's definition carries the mended schema,
// and the answer's warning says so; Gemini's gets a type on every schema.
func TestRenderMends(t *testing.T) {
	faulty := catalog.Tool{Server: "photos", Name: "tag", Description: "Tag photos.",
		Schemas: catalog.MakeSchemas([]byte(`{"properties":{"tags":{"type":"array"},"photo":{"type":"str"},"meta":{"description":"anything"}},"required":["photo"]}`), nil, nil)}
	mended := map[string]any{"type": "object", "properties": map[string]any{
		"tags": map[string]any{"type": "array", "items": map[string]any{}}, "photo": map[string]any{"type": "string"},
		"meta": map[string]any{"description": "anything"}}, "required": []any{"photo"}}
	gemini := map[string]any{"type": "object", "properties": map[string]any{
		"tags": map[string]any{"type": "array", "items": map[string]any{"type": "string"}}, "photo": map[string]any{"type": "string"},
		"meta": map[string]any{"type": "string", "description": "anything"}}, "required": []any{"photo"}}
	tests := []struct {
		format, key string
		want        map[string]any
		notes       []string
	}{
		{"mcp", "inputSchema", mended, nil},
		{"openai", "function.parameters", mended, nil},
		{"openai_responses", "parameters", mended, nil},
		{"anthropic", "input_schema", mended, nil},
		{"gemini", "parameters", gemini, []string{`2 schemas without a type given "string"`}},
	}
	for _, tt := range tests {
		raw, warning, err := render(tt.format, faulty, "tag")
		if err != nil {
			t.Fatal(err)
		}
		var got any = decode(t, raw)
		for k := range strings.SplitSeq(tt.key, ".") {
			got = got.(map[string]any)[k]
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s: schema mismatch (-want +got):\n%s", tt.format, diff)
		}
		for _, n := range append(tt.notes, `/properties/tags: an array without "items"`, `/properties/photo: type "str"`, `no "type" at the top`) {
			if !strings.Contains(warning, n) {
				t.Errorf("%s: warning %q lacks %q", tt.format, warning, n)
			}
		}
	}
}
