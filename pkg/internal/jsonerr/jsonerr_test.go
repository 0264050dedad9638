package jsonerr

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// Inner is embedded, as Go names it; the JSON has no such level.
type Inner struct {
	Limit int `json:"limit"`
}

type doc struct {
	Inner
	TopK   *int     `json:"top_k"`
	Names  []string `json:"names"`
	Ratio  float64  `json:"ratio"`
	On     bool     `json:"on"`
	Name   string   `json:"name"`
	Nested struct {
		N int `json:"n"`
	} `json:"nested"`
	Labels  map[string]string `json:"labels"`
	Entries []Inner           `json:"entries"`
}

// TestType: a value of the wrong kind is named by its JSON path, what the
// field takes and what came, in JSON's words and never Go's.
func TestType(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want Mismatch
	}{
		{`{"limit":"5"}`, Mismatch{"limit", "an integer", "string"}},
		{`{"top_k":2.5}`, Mismatch{"top_k", "an integer", "number 2.5"}},
		{`{"names":"a"}`, Mismatch{"names", "an array", "string"}},
		{`{"ratio":true}`, Mismatch{"ratio", "a number", "bool"}},
		{`{"on":"yes"}`, Mismatch{"on", "true or false", "string"}},
		{`{"name":[1]}`, Mismatch{"name", "a string", "array"}},
		{`{"nested":{"n":"x"}}`, Mismatch{"nested.n", "an integer", "string"}},
		{`{"labels":[]}`, Mismatch{"labels", "an object", "array"}},
		{`{"entries":[{"limit":"x"}]}`, Mismatch{"entries[0].limit", "an integer", "string"}},
		{`{"entries":[{"limit":1}, {"limit":2},{"limit":[3]}]}`, Mismatch{"entries[2].limit", "an integer", "array"}},
		{`{"names":["a", 1]}`, Mismatch{"names[1]", "a string", "number"}},
		{`{"names":["a",{"b":1}]}`, Mismatch{"names[1]", "a string", "object"}},
		{`{"labels":{"team":"a","a.b":7}}`, Mismatch{"labels.a.b", "a string", "number"}},
		{`{"limit":1,"nested":{"n":[]}}`, Mismatch{"nested.n", "an integer", "array"}},
		{`["x"]`, Mismatch{"", "an object", "array"}},
		{`{"top_k":1` + strings.Repeat("0", 5000) + `}`, Mismatch{"top_k", "an integer", "number 1" + strings.Repeat("0", 56) + "…"}},
	} {
		var d doc
		m, ok := Type(json.Unmarshal([]byte(tt.in), &d), []byte(tt.in))
		if !ok || m != tt.want {
			t.Errorf("%.40s: %+v, %v; want %+v", tt.in, m, ok, tt.want)
		}
	}
	// Without the document, the path is encoding/json's, without items.
	var d doc
	if m, _ := Type(json.Unmarshal([]byte(`{"entries":[{"limit":"x"}]}`), &d), nil); m.Field != "entries.limit" {
		t.Errorf("no document: field %q, want entries.limit", m.Field)
	}
	if _, ok := Type(errors.New("json: unknown field"), nil); ok {
		t.Error("an error that is no type mismatch read as one")
	}
}

// FuzzType: any document that fails to decode into doc gets a path that
// is bounded and never panics, whatever the document and its offset.
func FuzzType(f *testing.F) {
	f.Add(`{"entries":[{"limit":1},{"limit":"x"}]}`)
	f.Add(`{"names":["a",{"b":[1,{"c":2}]}]}`)
	f.Add(`{"labels":{"` + strings.Repeat("k", 200) + `":7}}`)
	f.Add(`[{"limit":"x"}]`)
	f.Fuzz(func(t *testing.T, in string) {
		var d doc
		m, ok := Type(json.Unmarshal([]byte(in), &d), []byte(in))
		if ok && len(m.Field) > len(in)+2*strings.Count(in, "[") {
			t.Errorf("a path of %d bytes from %d", len(m.Field), len(in))
		}
	})
}
