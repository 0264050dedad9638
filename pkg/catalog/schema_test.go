package catalog

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/toolsearch/toolsearch/pkg/redact"
)

// FuzzSchemaText holds readSchema to what the text was when schemas were
// decoded into map[string]any by encoding/json, on every schema that
// encoding/json reads (it refuses a number beyond float64's range
// anywhere in a schema, which readSchema reads past).
func FuzzSchemaText(f *testing.F) {
	for _, s := range []string{
		`{"type":"object","properties":{"state":{"type":"string","description":"Filter by state","enum":["open","closed"]},"limit":{"type":"integer","enum":[1,2.5,1e21,true,null,{}]}}}`,
		`{"properties":{"b":{"description":"x"},"a":{"properties":{"deep":{"items":{"enum":["q"]}}},"items":{"properties":{"i":{}},"enum":[false]}}}}`,
		`{"properties":{"a":{"description":"first"},"a":{"description":"second"}},"properties":{"z":null}}`,
		`{"properties":{"caf\u00e9":{"description":"\ud83d\ude00 \"quoted\""},"bad\ud800":{"description":"\u0000"}}}`,
		"{\"properties\":{\"x\xff\":{\"description\":\"y\xfe\"}}}",
		`{"properties":{"userName":{"description":""},"n":1,"s":"str","l":[1]}}`,
		`[1]`, `null`, `{"properties":[]}`, `{"properties":{"a":{"items":[{"enum":["x"]}]}}}`,
		`{"properties":{"big":{"enum":[1e400]}}}`,
		`{"properties":{"a":{"items":{"enum":["i"],"items":{"enum":["ii"],"properties":{"x":{}}},"properties":{"y":{"items":{"enum":[3]}}}}}}}`,
	} {
		f.Add([]byte(s))
	}
	// Deeper than the walk goes, by properties and by items.
	deep := `{"description":"leaf","enum":["e"],"items":{"enum":["f"]}}`
	for i := range maxSchemaDepth + 3 {
		deep = fmt.Sprintf(`{"enum":[%d],"properties":{"p%d":%s},"items":{"properties":{"q%d":%s}}}`, i, i, deep, i, `{"enum":["x"]}`)
	}
	f.Add([]byte(deep))
	f.Fuzz(func(t *testing.T, schema []byte) {
		params, enums, names := readSchema(MakeSchemas(schema, nil, nil))
		var m map[string]any
		if json.Unmarshal(schema, &m) != nil {
			return
		}
		var wantParams, wantEnums strings.Builder
		mapWalk(m, 0, &wantParams, &wantEnums)
		props, _ := m["properties"].(map[string]any)
		wantNames := slices.Sorted(maps.Keys(props))
		if params != wantParams.String() || enums != wantEnums.String() || !slices.Equal(names, wantNames) {
			t.Fatalf("readSchema(%q) = %q, %q, %q; with maps %q, %q, %q", schema, params, enums, names, wantParams.String(), wantEnums.String(), wantNames)
		}
	})
}

// mapWalk is the schema walk as it was over encoding/json's maps.
func mapWalk(schema map[string]any, depth int, params, enums *strings.Builder) {
	if depth > maxSchemaDepth || params.Len()+enums.Len() > maxSchemaTextBytes {
		return
	}
	props, _ := schema["properties"].(map[string]any)
	names := make([]string, 0, len(props))
	for name := range props {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		prop, _ := props[name].(map[string]any)
		params.WriteString(name)
		if w := wordsOf(name); w != "" {
			params.WriteString(" (" + w + ")")
		}
		if d, ok := prop["description"].(string); ok && d != "" {
			params.WriteString(": ")
			params.WriteString(redact.Clip(d, 1024, ""))
		}
		params.WriteString("; ")
		mapEnums(prop, enums)
		if prop != nil {
			mapWalk(prop, depth+1, params, enums)
			if items, ok := prop["items"].(map[string]any); ok {
				mapEnums(items, enums)
				mapWalk(items, depth+1, params, enums)
			}
		}
	}
}

func mapEnums(prop map[string]any, enums *strings.Builder) {
	values, _ := prop["enum"].([]any)
	for _, v := range values {
		switch v := v.(type) {
		case string:
			enums.WriteString(v)
		case float64, bool:
			fmt.Fprint(enums, v)
		default:
			continue
		}
		enums.WriteString(", ")
	}
}

// ReadSchemaTop reads keys as the tool's text does: exactly as written,
// the last of repeated ones.
func TestReadSchemaTop(t *testing.T) {
	for _, tt := range []struct {
		schema string
		want   SchemaTop
		ok     bool
	}{
		{`{"type":"object","properties":{"b":{"description":"B."},"a":{}},"required":["a",1]}`,
			SchemaTop{Type: []byte(`"object"`), HasParams: true, ParamsOK: true, Params: []SchemaParam{{"a", false}, {"b", true}}, Required: []string{"a"}, NotNames: []string{"1"}, RequiredOK: true}, true},
		{`{"Properties":{"a":{}},"type":"array","type":"object"}`, SchemaTop{Type: []byte(`"object"`), ParamsOK: true, RequiredOK: true}, true},
		{`{"properties":{"a":{"Description":"x"},"a":{"description":" \t"}}}`,
			SchemaTop{HasParams: true, ParamsOK: true, Params: []SchemaParam{{"a", false}}, RequiredOK: true}, true},
		{`{"properties":[],"required":{}}`, SchemaTop{}, true},
		{`{"properties":null,"required":null}`, SchemaTop{ParamsOK: true, RequiredOK: true}, true},
		{`[]`, SchemaTop{}, false},
		{`{} {}`, SchemaTop{}, false},
		{``, SchemaTop{}, false},
	} {
		got, ok := ReadSchemaTop([]byte(tt.schema))
		if ok != tt.ok || !cmp.Equal(got, tt.want, cmpopts.EquateEmpty()) {
			t.Errorf("ReadSchemaTop(%s) = %+v, %v; want %+v, %v", tt.schema, got, ok, tt.want, tt.ok)
		}
	}
}
