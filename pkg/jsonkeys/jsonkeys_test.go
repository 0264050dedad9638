package jsonkeys

import (
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
		{`{"c":1}`, `key "c" is unknown`},
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
