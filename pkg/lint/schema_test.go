package lint

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/toolsearch/toolsearch/pkg/catalog"
)

// jsonFindings is what lint found in a schema when it decoded the schema
// with encoding/json (before catalog.ReadSchemaTop): the oracle that the
// reader must agree with wherever encoding/json's case-insensitive keys do
// not come in. One difference is on purpose: a null in "required", which
// encoding/json read as the name "", is not a name.
func jsonFindings(raw []byte) (typ []byte, missing, notNames, undefined []string, ok bool) {
	var top struct {
		Type       json.RawMessage `json:"type"`
		Properties json.RawMessage `json:"properties"`
		Required   json.RawMessage `json:"required"`
	}
	// encoding/json reads null into a struct as nothing at all, without
	// error; a schema of null is no object, as the catalog refuses it.
	if len(raw) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) || json.Unmarshal(raw, &top) != nil {
		return nil, nil, nil, nil, false
	}
	var props map[string]json.RawMessage
	propsOK := len(top.Properties) == 0 || json.Unmarshal(top.Properties, &props) == nil
	if propsOK {
		for name, p := range props {
			var prop struct {
				Description string `json:"description"`
			}
			if json.Unmarshal(p, &prop) != nil || strings.TrimSpace(prop.Description) == "" {
				missing = append(missing, name)
			}
		}
		slices.Sort(missing)
	}
	var req []json.RawMessage
	if propsOK && (len(top.Required) == 0 || json.Unmarshal(top.Required, &req) == nil) {
		for _, r := range req {
			var name string
			if string(r) == "null" || json.Unmarshal(r, &name) != nil {
				notNames = append(notNames, string(r))
				continue
			}
			if _, found := props[name]; !found && props != nil {
				undefined = append(undefined, name)
			}
		}
	}
	return top.Type, missing, notNames, undefined, true
}

// folded reports whether raw may hold a key that encoding/json matches to
// one lint reads only by ignoring case or an escape: "Type", "\u0074ype".
func folded(raw []byte) bool {
	if bytes.Contains(raw, []byte(`\u`)) {
		return true
	}
	lower := bytes.ToLower(raw)
	for _, k := range []string{`"type"`, `"properties"`, `"required"`, `"description"`} {
		if bytes.Count(lower, []byte(k)) != bytes.Count(raw, []byte(k)) {
			return true
		}
	}
	return false
}

func FuzzSchemaTop(f *testing.F) {
	for _, s := range []string{
		`{"type":"object","properties":{"a":{"type":"string"},"b":{"description":"B."}},"required":["a","c",true]}`,
		`{"type":["object","null"],"properties":{}}`,
		`{"properties":null,"required":null}`,
		`{"properties":[],"required":["x"]}`,
		`{"properties":{"a":{"description":" "},"a":{"description":"kept, the last"}},"required":{"a":1}}`,
		`{"type":"array","items":{"type":"number"}}`,
		`{"properties":{"x":null,"y":"s","z":{"description":7}},"required":[1.5e3,null,"x"]}`,
		`{"type":"object","properties":{"\xff":{"description":"\xfe"}}}`,
		`[1,2]`,
		`{"type":"object"`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if folded(raw) {
			return
		}
		typ, missing, notNames, undefined, ok := jsonFindings(raw)
		top, gotOK := catalog.ReadSchemaTop(raw)
		if gotOK != ok {
			t.Fatalf("%q: read %v, encoding/json %v", raw, gotOK, ok)
		}
		if !ok {
			return
		}
		var gotMissing []string
		for _, p := range top.Params {
			if !p.Described {
				gotMissing = append(gotMissing, p.Name)
			}
		}
		gotNot, gotUndefined := badRequired(top)
		if !bytes.Equal(top.Type, typ) || !slices.Equal(gotMissing, missing) || !slices.Equal(gotNot, notNames) || !slices.Equal(gotUndefined, undefined) {
			t.Fatalf("%q:\nread          type %s, undescribed %q, not names %q, undefined %q\nencoding/json type %s, undescribed %q, not names %q, undefined %q",
				raw, top.Type, gotMissing, gotNot, gotUndefined, typ, missing, notNames, undefined)
		}
	})
}

func TestWordCount(t *testing.T) {
	for _, s := range []string{"", " ", "one", " two  words ", "tab\tand\nnew line", "\u00a0nbsp\u00a0 \u2003em", "\xffbad\xfe utf8", "\v\f\r edge ", "x\u0085y"} {
		if got, want := wordCount(s), len(strings.Fields(s)); got != want {
			t.Errorf("wordCount(%q) = %d, strings.Fields gives %d", s, got, want)
		}
	}
}
