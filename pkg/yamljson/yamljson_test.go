package yamljson

import (
	"github.com/go-json-experiment/json/jsontext"
	"strings"
	"testing"
)

func TestToJSON(t *testing.T) {
	tests := []struct {
		name, yaml, want, wantErr string
	}{
		{name: "YAML 1.1 booleans stay strings", yaml: "y: [on, off, yes, no, y, n, Y, N]\nn: 1", want: `{"n":1,"y":["on","off","yes","no","y","n","Y","N"]}`},
		{name: "true and false are booleans", yaml: "a: [true, false, True]", want: `{"a":[true,false,true]}`},
		{name: "required list of a schema", yaml: "properties: {x: {type: number}, y: {type: number}}\nrequired: [x, y]", want: `{"properties":{"x":{"type":"number"},"y":{"type":"number"}},"required":["x","y"]}`},
		{name: "numbers", yaml: "i: 42\nf: 2.5\nh: 0x1F\ne: 1e3", want: `{"e":1000,"f":2.5,"h":31,"i":42}`},
		{name: "nulls", yaml: "a: null\nb: ~\nc:", want: `{"a":null,"b":null,"c":null}`},
		{name: "timestamps stay as written", yaml: "d: 2024-01-31\nt: 2001-12-14t21:59:43.10-05:00", want: `{"d":"2024-01-31","t":"2001-12-14t21:59:43.10-05:00"}`},
		{name: "non-string keys spelled out", yaml: "1: a\n2.5: b\ntrue: c", want: `{"1":"a","2.5":"b","true":"c"}`},
		{name: "anchors, aliases and merge keys", yaml: "base: &b {a: 1}\nx: {<<: *b, c: 2}\ny: *b", want: `{"base":{"a":1},"x":{"a":1,"c":2},"y":{"a":1}}`},
		{name: "a top-level list", yaml: "- a\n- 1", want: `["a",1]`},
		{name: "empty", yaml: "", want: `null`},
		{name: "first document only", yaml: "a: 1\n---\nb: 2", want: `{"a":1}`},
		{name: "duplicate key", yaml: "a: 1\na: 2", wantErr: `mapping key "a" already defined`},
		{name: "infinity", yaml: "a: [1, .inf]", wantErr: "a: [1]: +Inf is not a JSON number"},
		{name: "syntax error", yaml: "a: [1, 2", wantErr: "yaml:"},
		{name: "alias bomb", yaml: billionLaughs, wantErr: "yaml:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ToJSON([]byte(tt.yaml))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ToJSON() = %s, %v; want an error containing %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || string(got) != tt.want {
				t.Fatalf("ToJSON() = %s, %v; want %s", got, err, tt.want)
			}
		})
	}
}

// billionLaughs expands to 10^9 strings if aliases are followed blindly.
var billionLaughs = func() string {
	var b strings.Builder
	b.WriteString("a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n")
	prev := "a"
	for _, name := range []string{"b", "c", "d", "e", "f", "g", "h", "i"} {
		b.WriteString(name + ": &" + name + " [")
		for i := range 10 {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString("*" + prev)
		}
		b.WriteString("]\n")
		prev = name
	}
	return b.String()
}()

func TestLocate(t *testing.T) {
	doc := "servers:\n  - name: s1\n    tools:\n      - {name: a, description: x}\n      - name: b\n        a/b: 1\n        ~x: 2\n        3: three\nbase: &b {k: v}\nref: *b\n"
	tests := []struct {
		ptr       string
		line, col int
		ok        bool
	}{
		{"", 1, 1, true},
		{"/servers", 1, 1, true},
		{"/servers/0", 2, 5, true},
		{"/servers/0/tools/0/description", 4, 19, true}, // a flow mapping: its key's column
		{"/servers/0/tools/1/name", 5, 9, true},
		{"/servers/0/tools/1/a~1b", 6, 9, true}, // ~1 is "/"
		{"/servers/0/tools/1/~0x", 7, 9, true},  // ~0 is "~"
		{"/servers/0/tools/1/3", 8, 9, true},    // a key YAML reads as a number
		{"/ref/k", 9, 11, true},                 // through an alias, where it is written
		{"/servers/1", 0, 0, false},
		{"/servers/x", 0, 0, false},
		{"/nope", 0, 0, false},
		{"/servers/0/name/deeper", 0, 0, false},
		{"servers", 0, 0, false},
	}
	for _, tt := range tests {
		line, col, ok := Locate([]byte(doc), jsontext.Pointer(tt.ptr))
		if line != tt.line || col != tt.col || ok != tt.ok {
			t.Errorf("Locate(%q) = %d, %d, %v; want %d, %d, %v", tt.ptr, line, col, ok, tt.line, tt.col, tt.ok)
		}
	}
	if _, _, ok := Locate([]byte("a: [1, 2"), "/a"); ok {
		t.Error("Locate in YAML that does not parse: ok")
	}
}
