package mcpserver

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// TestErrorsNameTheToolsArguments: a meta-tool's error names only what
// the tool takes (its arguments at any depth, and their values), never
// one of the HTTP API's fields: a model mends its call by what the error
// names, and told of "template" or "regex" it sends them and is refused
// again.
func TestErrorsNameTheToolsArguments(t *testing.T) {
	r := newRig(t, nil)
	cs := r.connect(t, "")
	long := strings.Repeat("é", 200) // 200 characters, 400 bytes: within the schema's length, over search's
	tests := []struct {
		tool string
		args map[string]any
		want string // in the error
	}{
		{"search_tools", map[string]any{}, `"query" (or "messages") is required`},
		{"search_tools", map[string]any{"query": "  "}, `"query" (or "messages") is required`},
		{"search_tools", map[string]any{"servers": []string{"weather"}}, `"query" (or "messages") is required`},
		{"search_tools", map[string]any{"query": "x", "cursor": "abc"}, `"cursor" pages an "operation":"list" answer`},
		{"search_tools", map[string]any{"cursor": "abc"}, `"cursor" pages`},
		{"search_tools", map[string]any{"messages": []map[string]any{{"role": "user", "content": "weather"}}, "operation": "list", "servers": []string{"weather"}}, `"messages" cannot be combined with "operation":"list"`},
		{"search_tools", map[string]any{"query": "x", "operation": "list", "servers": []string{"weather"}}, `"query" cannot be combined with "operation":"list"`},
		{"search_tools", map[string]any{"operation": "list"}, `"operation":"list" needs "servers" or "server_match"`},
		{"search_tools", map[string]any{"query": "x", "messages": []map[string]any{{"role": "user", "content": "y"}}}, `give "query" or "messages"`},
		{"search_tools", map[string]any{"operation": "list", "servers": []string{"weather"}, "cursor": "abc"}, `"cursor" is not one`},
		{"search_tools", map[string]any{"query": "x", "servers": []string{" "}}, `"servers" must not contain blank names`},
		{"search_tools", map[string]any{"query": "select:"}, `"select:" names no tools`},
		{"search_tools_regex", map[string]any{"pattern": "(x"}, `"pattern" is not a valid RE2 pattern`},
		{"search_tools_regex", map[string]any{"pattern": `"regex"(`}, `"pattern" is not a valid RE2 pattern: error parsing regexp: missing closing ): `},
		{"search_tools_regex", map[string]any{"pattern": "x{1000}{1000}"}, `"pattern" is not a valid RE2 pattern`},
		{"search_tools_regex", map[string]any{"pattern": "(((a{100}){100}){100})"}, `"pattern"`},
		{"search_tools_regex", map[string]any{"pattern": long}, `"pattern" is 400 bytes`},
		{"search_tools_regex", map[string]any{"pattern": "x", "cursor": "abc"}, `"cursor" is not one`},
	}
	quoted := regexp.MustCompile(`"([a-z_]+)"`)
	for _, tt := range tests {
		b, _ := json.Marshal(tt.args)
		name := tt.tool + " " + string(b)
		t.Run(name[:min(len(name), 60)], func(t *testing.T) {
			res := call(t, cs, tt.tool, tt.args)
			got := text(res)
			if !res.IsError || !strings.Contains(got, tt.want) {
				t.Fatalf("%s = %q (error %v), want an error with %q", tt.tool, got, res.IsError, tt.want)
			}
			if tt.args["pattern"] != nil {
				got, _, _ = strings.Cut(got, "error parsing regexp") // what follows quotes the pattern
			}
			words := schemaWords(argSchemas()[tt.tool])
			for _, m := range quoted.FindAllStringSubmatch(got, -1) {
				if !words[m[1]] {
					t.Errorf("%q names %q, which %s does not take", got, m[1], tt.tool)
				}
			}
		})
	}
}

// schemaWords are the names of a schema's properties at any depth and
// the strings of its enums: what an error about it may quote.
func schemaWords(s *jsonschema.Schema) map[string]bool {
	words := map[string]bool{}
	var walk func(*jsonschema.Schema)
	walk = func(s *jsonschema.Schema) {
		if s == nil {
			return
		}
		for name, p := range s.Properties {
			words[name] = true
			walk(p)
		}
		for _, v := range s.Enum {
			if str, ok := v.(string); ok {
				words[str] = true
			}
		}
		walk(s.Items)
		for _, sub := range append(append(s.AnyOf, s.OneOf...), s.AllOf...) {
			walk(sub)
		}
	}
	walk(s)
	return words
}
