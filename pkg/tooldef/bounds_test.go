package tooldef

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/toolsearch/toolsearch/pkg/catalog"
)

// recursiveSchema is a small schema whose $refs, inlined, would be
// unbounded: every node refers to the root and to a definition that
// refers back, width wide.
func recursiveSchema(width int) string {
	var props []string
	for i := range width {
		props = append(props, fmt.Sprintf(`"p%d":{"$ref":"#"},"q%d":{"$ref":"#/$defs/n"}`, i, i))
	}
	return fmt.Sprintf(`{"type":"object","properties":{%s},"$defs":{"n":{"type":"object","properties":{"a":{"$ref":"#"},"b":{"type":"array","items":{"$ref":"#/$defs/n"}}}}}}`, strings.Join(props, ","))
}

// TestRenderingIsBounded: no schema renders beyond the bounds, whatever
// its $refs; what is cut is said, in the definition and in the warning.
func TestRenderingIsBounded(t *testing.T) {
	wide := `{"type":"object","properties":{` + strings.Repeat(`"x":{"$ref":"#/$defs/a"},`, 1) + `"y":{"type":"string"}},"$defs":{` +
		`"a":{"type":"object","properties":{"a1":{"$ref":"#/$defs/b"},"a2":{"$ref":"#/$defs/b"},"a3":{"$ref":"#/$defs/b"},"a4":{"$ref":"#/$defs/b"}}},` +
		`"b":{"type":"object","properties":{"b1":{"$ref":"#/$defs/c"},"b2":{"$ref":"#/$defs/c"},"b3":{"$ref":"#/$defs/c"},"b4":{"$ref":"#/$defs/c"}}},` +
		`"c":{"type":"object","properties":{"c1":{"$ref":"#/$defs/d"},"c2":{"$ref":"#/$defs/d"},"c3":{"$ref":"#/$defs/d"},"c4":{"$ref":"#/$defs/d"}}},` +
		`"d":{"type":"object","properties":{"d1":{"$ref":"#/$defs/e"},"d2":{"$ref":"#/$defs/e"},"d3":{"$ref":"#/$defs/e"},"d4":{"$ref":"#/$defs/e"}}},` +
		`"e":{"type":"object","properties":{"e1":{"$ref":"#/$defs/f"},"e2":{"$ref":"#/$defs/f"},"e3":{"$ref":"#/$defs/f"},"e4":{"$ref":"#/$defs/f"}}},` +
		`"f":{"type":"string","description":"` + strings.Repeat("long text ", 40) + `"}}}`
	tests := []struct {
		name, schema, note string
	}{
		{"recursive, 1.5 KB", recursiveSchema(20), "recursive"},
		{"a diamond of definitions (4^5 leaves)", wide, "rendered in part"},
		{"self-reference through items", `{"type":"object","properties":{"list":{"type":"array","items":{"$ref":"#"}}}}`, "recursive"},
		// Large without any $ref: a description over the size bound.
		{"300 KB, no refs", `{"type":"object","properties":{"a":{"type":"string","description":"` + strings.Repeat("v", 300<<10) + `"}}}`, "too large"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tool := catalog.Tool{Server: "s", Name: "t", Schemas: catalog.MakeSchemas(json.RawMessage(tt.schema), nil, nil)}
			for _, format := range Formats {
				raw, warning, err := render(format, tool, "t")
				if err != nil {
					t.Fatalf("%s: %v", format, err)
				}
				if len(raw) > MaxSchemaBytes+len(tt.schema)+1024 {
					t.Errorf("%s: %d bytes from a %d-byte schema", format, len(raw), len(tt.schema))
				}
				if format == "gemini" && (!strings.Contains(warning, tt.note) || !strings.Contains(string(raw), "(")) {
					t.Errorf("%s: warning %q, definition %.200s; want both to say %q", format, warning, raw, tt.note)
				}
			}
		})
	}
	// A schema within bounds renders whole, without a warning.
	if _, warning, _ := GeminiSchema(json.RawMessage(`{"type":"object","properties":{"a":{"$ref":"#/$defs/x"},"b":{"$ref":"#/$defs/x"}},"$defs":{"x":{"type":"string"}}}`)); warning != "" {
		t.Errorf("a shared, non-recursive $ref: warning %q", warning)
	}
}
