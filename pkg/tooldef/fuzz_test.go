package tooldef

import (
	"encoding/json"
	"testing"

	"github.com/toolsearch/toolsearch/pkg/catalog"
)

// FuzzRender renders arbitrary input schemas in every format: never a
// panic, always JSON, and never larger than the bounds allow, whatever the
// $refs (seeds in testdata/fuzz/FuzzRender hold recursive and wide ones).
func FuzzRender(f *testing.F) {
	for _, seed := range []string{
		`{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`,
		`{"type":"object","properties":{"next":{"$ref":"#"}}}`,
		`{"$ref":"#/$defs/a","$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}}}`,
		recursiveSchema(8),
		`{"type":["string","null"],"enum":[1,"a",null],"const":3,"oneOf":[{"$ref":"#/x~1y"}]}`,
		`{}`, `[]`, `null`, `{"properties":{"":{"items":{"items":{"$ref":"#/properties"}}}}}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, schema string) {
		if !json.Valid([]byte(schema)) || len(schema) > 64<<10 {
			return
		}
		tool := catalog.Tool{Server: "s", Name: "t", Description: "d", Schemas: catalog.MakeSchemas(json.RawMessage(schema), nil, nil)}
		for _, format := range Formats {
			raw, _, err := render(format, tool, "t")
			if err != nil {
				continue // a schema that is not an object: an error, not a panic
			}
			if !json.Valid(raw) {
				t.Fatalf("%s: invalid JSON from %s", format, schema)
			}
			if len(raw) > MaxSchemaBytes+2*len(schema)+1024 {
				t.Fatalf("%s: %d bytes from a %d-byte schema", format, len(raw), len(schema))
			}
		}
	})
}

// FuzzMend mends arbitrary schemas: never a panic, always JSON, and once
// mended nothing is left to mend (seeds in testdata/fuzz/FuzzMend).
func FuzzMend(f *testing.F) {
	for _, seed := range []string{
		`{"type":"object","properties":{"a":{"type":"array"},"b":{"type":"str"},"c":"int"},"required":[1,"b"]}`,
		`{"properties":{"x":{"anyOf":["string",{"type":["list","null"]}]}},"$defs":{"d":{"items":[{"type":"dict"}]}}}`,
		`{"type":"array"}`, `{}`, `[]`, `"x"`, `{"properties":[],"allOf":{},"required":"a"}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, schema string) {
		if !json.Valid([]byte(schema)) || len(schema) > 64<<10 {
			return
		}
		got, warning := Mend(json.RawMessage(schema))
		if !json.Valid(got) {
			t.Fatalf("invalid JSON %s from %s", got, schema)
		}
		if warning == "" && string(got) != schema {
			t.Fatalf("changed %s to %s without a warning", schema, got)
		}
		for _, f := range faults(got) {
			if f.kind != rootNotObj {
				t.Fatalf("mended %s to %s, which still has %s: %s", schema, got, f.at, f.note)
			}
		}
	})
}

// FuzzSafeKeys: once renamed, every top-level parameter has a name
// Anthropic takes, none is lost, and each new name maps to one of the
// schema's own.
func FuzzSafeKeys(f *testing.F) {
	for _, seed := range []string{
		`{"type":"object","properties":{"filter[id]":{},"filter_id_":{},"año":{},"":{}},"required":["filter[id]"]}`,
		`{"properties":{"a\u0020b":1,"propertie\u0073":{}}}`, `{"properties":[]}`, `{}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, schema string) {
		var before struct{ Properties map[string]json.RawMessage }
		if json.Unmarshal([]byte(schema), &before) != nil || len(schema) > 64<<10 {
			return
		}
		got, names := SafeKeys(json.RawMessage(schema))
		var after struct{ Properties map[string]json.RawMessage }
		if err := json.Unmarshal(got, &after); err != nil {
			t.Fatalf("%s: %v", got, err)
		}
		if len(after.Properties) != len(before.Properties) {
			t.Fatalf("%s gave %s: %d properties, want %d", schema, got, len(after.Properties), len(before.Properties))
		}
		for k := range after.Properties {
			if !validKey(k) {
				t.Fatalf("%s gave %s: %q is not a name Anthropic takes", schema, got, k)
			}
			if own, ok := names[k]; ok {
				if _, was := before.Properties[own]; !was {
					t.Fatalf("%q maps to %q, not a name of %s", k, own, schema)
				}
			}
		}
	})
}
