package jsonkeys

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestObject(t *testing.T) {
	type inner struct {
		B string `json:"b"`
	}
	type req struct {
		A string `json:"a,omitempty"`
		inner
		C int `json:"-"`
		//lint:ignore U1000 present to show that unexported fields are not keys
		skip int
	}
	allowed := Fields[req]()
	if strings.Join(allowed, ",") != "a,b" {
		t.Fatalf("Fields = %v, want [a b]", allowed)
	}
	tests := []struct {
		in, want string
	}{
		{`{"a":"x","b":"y"}`, ""},
		{`{"a":"x","a":"y"}`, `key "a" is repeated`},
		{`{"a":{"k":1,"k":2}}`, `key "k" in .a is repeated`},
		{`{"a":[{"k":1},{"k":1,"k":2}]}`, `key "k" in .a[1] is repeated`},
		{`{"A":"x"}`, `key "A" is unknown (did you mean "a"?)`},
		{`{"c":1}`, `key "c" is unknown; it takes a, b`},
		{`{"` + strings.Repeat("k", 5000) + `":1}`, `key "` + strings.Repeat("k", 64) + `…" is unknown; it takes a, b`},
		{`not json`, ""},
		{`[1,2]`, ""},
	}
	for _, tt := range tests {
		err := Object([]byte(tt.in), allowed)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tt.want {
			t.Errorf("Object(%s) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestTyped: a key is checked against the struct found at its path, at
// any depth, through slices, pointers and maps; a map's own keys, and
// what a type decodes itself, are free.
func TestTyped(t *testing.T) {
	type leaf struct {
		Timeout string `json:"timeout"`
	}
	type item struct {
		Name    string            `json:"name"`
		Headers map[string]string `json:"headers"`
		Leaf    *leaf             `json:"leaf"`
		Raw     json.RawMessage   `json:"raw"`
	}
	type base struct {
		Shared int `json:"shared"`
	}
	type doc struct {
		base
		Items     []item          `json:"items"`
		Templates map[string]leaf `json:"templates"`
		Skip      string          `json:"-"`
	}
	rules := Typed[doc]()
	for _, tt := range []struct {
		json string
		want string // the unknown key's path and name; "" for none
	}{
		{`{"shared":1,"items":[{"name":"a","headers":{"X-Any":"1"},"leaf":{"timeout":"1s"},"raw":{"whatever":[1]}}],"templates":{"t":{"timeout":"2s"}}}`, ""},
		{`{"itemz":[]}`, `"itemz"`},
		{`{"Skip":"x"}`, `"Skip"`},
		{`{"items":[{"name":"a"},{"nmae":"b"}]}`, `"nmae" in .items[1]`},
		{`{"items":[{"leaf":{"timout":"1s"}}]}`, `"timout" in .items[0].leaf`},
		{`{"templates":{"t":{"timeout":"1s","extra":1}}}`, `"extra" in .templates.t`},
	} {
		err := Scan([]byte(tt.json), rules)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: %v, want it allowed", tt.json, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: %v, want the key %s named", tt.json, err, tt.want)
		}
	}
}

func TestNearest(t *testing.T) {
	search := []string{"query", "messages", "top_k", "mode", "servers", "server_match", "include_schema", "format"}
	feedback := []string{"id", "used"}
	for _, tt := range []struct {
		key     string
		allowed []string
		want    string
	}{
		{"QUERY", search, "query"},
		{"topK", search, "top_k"},
		{"server", search, "servers"},
		{"qeury", search, "query"},  // two letters swapped
		{"top_kk", search, "top_k"}, // one added
		{"formt", search, "format"}, // one dropped
		{"include_schemas", search, "include_schema"},
		{"serverMatch", search, "server_match"},
		{"search_id", feedback, "id"},    // a word of its own, at the end
		{"used_tools", feedback, "used"}, // at the start
		{"mod", search, ""},              // three letters: one error is too loose
		{"moda", search, "mode"},
		{"k", search, ""},
		{"user", feedback, "used"},
		{"usd", feedback, ""},                   // three letters
		{"tool_id", []string{"id", "tool"}, ""}, // ends with one and starts with another
		{"nothing_like", search, ""},
		{"incl", search, "include_schema"}, // an abbreviation
		{"desc", []string{"name", "description", "inputSchema"}, "description"}, // in any case
		{"serv", search, ""}, // servers or server_match
		{"for", search, ""},  // three letters
		{"", search, ""},
	} {
		if got := nearest(tt.key, tt.allowed); got != tt.want {
			t.Errorf("nearest(%q) = %q, want %q", tt.key, got, tt.want)
		}
	}
}
