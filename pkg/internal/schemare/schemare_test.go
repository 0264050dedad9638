package schemare

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

func decode(t testing.TB, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestCheck(t *testing.T) {
	many := func(n int, p string) string {
		props := make([]string, n)
		for i := range props {
			props[i] = `"p` + strings.Repeat("x", i) + `":{"pattern":"` + p + `"}`
		}
		return `{"properties":{` + strings.Join(props, ",") + `}}`
	}
	tests := []struct {
		name, schema string
		at           string // "" for no problem
		refused      bool   // by RE2, not by the budget
	}{
		{"none", `{"type":"object","properties":{"q":{"type":"string"}}}`, "", false},
		{"RE2 reads it", `{"properties":{"q":{"pattern":"^[a-z]+\\d{2,}$"}}}`, "", false},
		{"a lookahead", `{"properties":{"q":{"pattern":"^(?=a)b"}}}`, "/properties/q/pattern", true},
		{"a backreference in items", `{"properties":{"l":{"items":{"pattern":"(a)\\1"}}}}`, "/properties/l/items/pattern", true},
		{"in a tuple's items", `{"prefixItems":[{"pattern":"x"},{"pattern":"(?!y)"}]}`, "/prefixItems/1/pattern", true},
		{"a property name pattern", `{"patternProperties":{"^(?!x_)":{"type":"string"}}}`, "/patternProperties", true},
		{"a definition's, its name escaped", `{"$defs":{"a/b~":{"pattern":"\\p{Script=Latin}"}}}`, "/$defs/a~1b~0/pattern", true},
		{"a parameter called pattern", `{"properties":{"pattern":{"type":"string"}}}`, "", false},
		{"data, not schemas", `{"default":{"pattern":"(?=x)"},"examples":[{"pattern":"(?<=y)"}],"enum":[{"pattern":"(?=z)"}],"x-vendor":{"pattern":"(?=w)"}}`, "", false},
		{"a pattern that is no string", `{"properties":{"q":{"pattern":5}}}`, "", false},
		{"keywords in other cases, as jsonschema-go reads them", `{"Properties":{"q":{"PATTERN":"("}}}`, "/Properties/q/PATTERN", true},
		{"as many patterns as the budget", many(MaxPatterns, "^a$"), "", false},
		{"one more", many(MaxPatterns+1, "^a$"), "/properties/p" + strings.Repeat("x", MaxPatterns) + "/pattern", false},
		{"a repetition past the instructions", `{"properties":{"q":{"pattern":"(\\w+\\s*){1,1000}(\\w+\\s*){1,1000}(\\w+\\s*){1,1000}"}}}`, "/properties/q/pattern", false},
		{"Unicode classes past the budget", many(1, strings.Repeat(`\\p{L}`, MaxUnicodeClasses+1)), "/properties/p/pattern", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Check(decode(t, tt.schema))
			switch {
			case tt.at == "" && p != nil:
				t.Errorf("problem %+v, want none", p)
			case tt.at != "" && p == nil:
				t.Errorf("no problem, want one at %s", tt.at)
			case p != nil && (p.At != tt.at || (p.Err != nil) != tt.refused):
				t.Errorf("problem at %s (err %v), want at %s (refused: %v)", p.At, p.Err, tt.at, tt.refused)
			}
		})
	}
}

// FuzzCheck: Check never panics, and a schema it finds no problem in is
// one whose patterns jsonschema-go (the validator call_tool uses) reads:
// every pattern it compiles, Check has read.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{
		`{"properties":{"q":{"pattern":"^[a-z]{2,8}$"}}}`,
		`{"patternProperties":{"^x":{"pattern":"(?=a)"}}}`,
		`{"items":{"pattern":"a{1000}"},"anyOf":[{"pattern":"(b{10}){10}"}]}`,
		`{"$defs":{"d":{"not":{"pattern":"\\p{Greek}+"}}},"if":{"pattern":"x*?"}}`,
		`{"definitions":{"d":{"pattern":"("}},"dependencies":{"a":["b"],"c":{"pattern":"[z-a]"}}}`,
		`{"default":{"pattern":"(?=x)"},"properties":{"pattern":{"const":"(?=y)"}}}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var v any
		if json.Unmarshal([]byte(s), &v) != nil || Check(v) != nil {
			return
		}
		var sch jsonschema.Schema
		if json.Unmarshal([]byte(s), &sch) != nil {
			return
		}
		if _, err := sch.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: false}); err != nil && strings.Contains(err.Error(), "regexp") {
			t.Fatalf("%s: Check found nothing, and the validator says %v", s, err)
		}
	})
}
