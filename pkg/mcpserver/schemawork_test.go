package mcpserver

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// bomb is a schema of n definitions, each two branches to the next: the
// validator visits 2^n of them for one value that fails the last.
func bomb(n int) string {
	var defs []string
	for i := range n {
		next := fmt.Sprintf(`{"$ref":"#/$defs/a%d"}`, i+1)
		defs = append(defs, fmt.Sprintf(`"a%d":{"anyOf":[%s,{"allOf":[%s]}]}`, i, next, next))
	}
	defs = append(defs, fmt.Sprintf(`"a%d":{"type":"string"}`, n))
	return `{"type":"object","$defs":{` + strings.Join(defs, ",") + `},"properties":{"x":{"$ref":"#/$defs/a0"}}}`
}

// TestValidateBounded: arguments are checked against an upstream's schema
// when checking it costs what a real schema does, and passed to the
// upstream unchecked when the schema would make checking them explode.
func TestValidateBounded(t *testing.T) {
	tree := `{"type":"object","$defs":{"node":{"type":"object","properties":{"name":{"type":"string"},"children":{"type":"array","items":{"$ref":"#/$defs/node"}}},"required":["name"]}},"properties":{"root":{"$ref":"#/$defs/node"}}}`
	tests := []struct {
		name, schema, args string
		wantErr            bool
	}{
		{"plain, valid", `{"type":"object","properties":{"n":{"type":"number"}}}`, `{"n":1}`, false},
		{"plain, invalid", `{"type":"object","properties":{"n":{"type":"number"}}}`, `{"n":"one"}`, true},
		{"nullable anyOf, invalid", `{"type":"object","properties":{"n":{"anyOf":[{"type":"number"},{"type":"null"}]}}}`, `{"n":"one"}`, true},
		{"recursive tree, valid", tree, `{"root":{"name":"a","children":[{"name":"b","children":[{"name":"c"}]}]}}`, false},
		{"recursive tree, invalid deep down", tree, `{"root":{"name":"a","children":[{"name":"b","children":[{"children":[]}]}]}}`, true},
		{"a few branches to the next, invalid", bomb(6), `{"x":1}`, true},
		{"branches doubling past the bound: unchecked", bomb(24), `{"x":1}`, false},
		{"a $ref to an anchor: unchecked", `{"type":"object","$defs":{"s":{"$anchor":"s","type":"string"}},"properties":{"x":{"$ref":"#s"}}}`, `{"x":1}`, false},
		{"a $ref into itself on one value: unchecked", `{"type":"object","$defs":{"a":{"anyOf":[{"$ref":"#/$defs/a"}]}},"properties":{"x":{"$ref":"#/$defs/a"}}}`, `{"x":1}`, false},
	}
	for _, tt := range tests {
		err := validate(json.RawMessage(tt.schema), json.RawMessage(tt.args))
		if (err != nil) != tt.wantErr {
			t.Errorf("%s: validate = %v, want an error: %v", tt.name, err, tt.wantErr)
		}
	}
}

// FuzzBoundedValidation: the walk ends, within its bound, on any schema
// and arguments.
func FuzzBoundedValidation(f *testing.F) {
	f.Add(bomb(8), `{"x":1}`)
	f.Add(`{"type":"object","properties":{"n":{"type":"number"}},"patternProperties":{"^a":{"type":"string"}},"additionalProperties":false}`, `{"n":1,"ab":"x","z":[1,2]}`)
	f.Add(`{"items":[{"type":"string"}],"prefixItems":[true],"contains":{"$ref":"#"}}`, `[1,[2,[3]]]`)
	f.Add(`{"$defs":{"a":{"not":{"$ref":"#/$defs/a"}}},"$ref":"#/$defs/a"}`, `{}`)
	f.Fuzz(func(t *testing.T, schema, args string) {
		var s, v any
		if json.Unmarshal([]byte(schema), &s) != nil || json.Unmarshal([]byte(args), &v) != nil {
			return
		}
		w := walker{root: s, left: maxValidationVisits}
		w.visit(s, v, 0)
		if w.left < -1 {
			t.Fatalf("the walk went on past its bound: %d left", w.left)
		}
	})
}
