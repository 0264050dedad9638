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
		{`{"entries":[{"limit":"x"}]}`, Mismatch{"entries.limit", "an integer", "string"}},
		{`["x"]`, Mismatch{"", "an object", "array"}},
		{`{"top_k":1` + strings.Repeat("0", 5000) + `}`, Mismatch{"top_k", "an integer", "number 1" + strings.Repeat("0", 56) + "…"}},
	} {
		var d doc
		m, ok := Type(json.Unmarshal([]byte(tt.in), &d))
		if !ok || m != tt.want {
			t.Errorf("%.40s: %+v, %v; want %+v", tt.in, m, ok, tt.want)
		}
	}
	if _, ok := Type(errors.New("json: unknown field")); ok {
		t.Error("an error that is no type mismatch read as one")
	}
}
