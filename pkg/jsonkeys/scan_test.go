package jsonkeys

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"testing"
)

// oracle is the key check on encoding/json's tokens, as it was before
// Scan: what Scan must agree with on every valid document.
func oracle(data []byte, allowed []string) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	err := oracleWalk(dec, allowed)
	var ke *Error
	if errors.As(err, &ke) {
		return ke
	}
	return nil
}

func oracleWalk(dec *json.Decoder, allowed []string) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch tok {
	case json.Delim('{'):
		seen := map[string]bool{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return err
			}
			key, _ := kt.(string)
			if seen[key] {
				return &Error{Key: key, Problem: "repeated"}
			}
			if allowed != nil && !slices.Contains(allowed, key) {
				return Unknown(key, allowed)
			}
			seen[key] = true
			if err := oracleWalk(dec, nil); err != nil {
				return within(err, "."+key)
			}
		}
		_, err = dec.Token()
		return err
	case json.Delim('['):
		for i := 0; dec.More(); i++ {
			if err := oracleWalk(dec, nil); err != nil {
				return within(err, "["+strconv.Itoa(i)+"]")
			}
		}
		_, err = dec.Token()
		return err
	}
	return nil
}

func TestScan(t *testing.T) {
	tools := func(path []string) []string {
		if slices.Equal(path, []string{"servers", "[]", "tools", "[]"}) {
			return []string{"name", "inputSchema"}
		}
		return nil
	}
	tests := []struct {
		name, doc string
		rules     Rules
		want      string // the error, "" for none
	}{
		{"clean", `{"a":1,"b":[{"c":2},{"c":3}]}`, nil, ""},
		{"repeated at the top", `{"a":1,"a":2}`, nil, `key "a" is repeated`},
		{"repeated deep", `{"a":{"b":[1,{"x":1,"x":2}]}}`, nil, `key "x" in .a.b[1] is repeated`},
		{"repeated by escape", `{"ab":1,"a\u0062":2}`, nil, `key "ab" is repeated`},
		{"many keys, repeated", `{"k1":1,"k2":1,"k3":1,"k4":1,"k5":1,"k6":1,"k7":1,"k8":1,"k9":1,"k10":1,"k3":2}`, nil, `key "k3" is repeated`},
		{"same key in sibling objects", `[{"a":1},{"a":1}]`, nil, ""},
		{"unknown where a rule says", `{"servers":[{"tools":[{"name":"x","input_schema":{}}]}]}`, tools, `key "input_schema" in .servers[0].tools[0] is unknown (did you mean "inputSchema"?)`},
		{"any key elsewhere", `{"servers":[{"anything":1,"tools":[]}]}`, tools, ""},
		{"malformed is the decoder's", `{"a":1,,"a":2}`, nil, ""},
		{"strings with brackets and quotes", `{"a":"}{\"][","b":"\\","c":"a\"b"}`, nil, ""},
		{"literals and numbers", `{"a":true,"b":false,"c":null,"d":-1.5e3,"e":[0,1e-2]}`, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := fmt.Sprint(Scan([]byte(tt.doc), tt.rules))
			if tt.want == "" && got != "<nil>" || tt.want != "" && got != tt.want {
				t.Errorf("Scan(%s) = %s, want %q", tt.doc, got, tt.want)
			}
		})
	}
}

// FuzzScan: on every valid document, Scan and the token-based oracle
// agree, error for error, and Object agrees with the oracle's top-level
// check.
func FuzzScan(f *testing.F) {
	for _, s := range []string{`{"a":1,"b":{"c":[1,2,{"d":null}]}}`, `{"a":1,"a":2}`, `[{"x":"\u0078"},{"x":1,"x":2}]`,
		`{"query":"a","QUERY":"b"}`, `{"k1":1,"k2":1,"k3":1,"k4":1,"k5":1,"k6":1,"k7":1,"k8":1,"k9":1,"k9":2}`, `"s"`, `12`, `{"\ud800":1,"\ufffd":2}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			_ = Scan(data, nil) // must not panic
			return
		}
		if got, want := fmt.Sprint(Scan(data, nil)), fmt.Sprint(oracle(data, nil)); got != want {
			t.Fatalf("Scan(%q) = %s, the oracle says %s", data, got, want)
		}
		allowed := []string{"query", "top_k"}
		if got, want := fmt.Sprint(Object(data, allowed)), fmt.Sprint(oracle(data, allowed)); got != want {
			t.Fatalf("Object(%q) = %s, the oracle says %s", data, got, want)
		}
	})
}
