package catalog

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestDefault(t *testing.T) {
	c, err := Default()
	if err != nil {
		t.Fatalf("Default() error: %v", err)
	}
	if c.Len() < 60 || len(c.Servers()) < 6 {
		t.Errorf("Default() has %d tools in %d servers, want at least 60 in 6", c.Len(), len(c.Servers()))
	}
	if len(c.Warnings()) != 0 {
		t.Errorf("Default() warnings: %v", c.Warnings())
	}
	if len(c.Hash()) != 64 {
		t.Errorf("Hash() = %q, want 64 hex digits", c.Hash())
	}
	// YAML 1.1 would read the parameter "y" as true, in properties and in
	// required alike.
	i, err := c.Resolve("compute/fit_curve")
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Properties map[string]any `json:"properties"`
		Required   []any          `json:"required"`
	}
	if err := json.Unmarshal(c.Tool(i).Schemas.Input(), &schema); err != nil {
		t.Fatal(err)
	}
	if _, ok := schema.Properties["y"]; !ok || fmt.Sprint(schema.Required) != "[x y model]" {
		t.Errorf("fit_curve schema: properties %v, required %v; want a \"y\" property and [x y model]", schema.Properties, schema.Required)
	}
}

// TestYAMLKeepsYAML11Booleans: parameters and enum values that YAML 1.1
// reads as booleans stay strings.
func TestYAMLKeepsYAML11Booleans(t *testing.T) {
	doc := `servers:
  - name: home
    tools:
      - name: set_switch
        description: Turn a switch on or off.
        inputSchema:
          type: object
          properties:
            state: {type: string, enum: [on, off]}
            y: {type: integer}
          required: [state, y]
`
	p, err := Parse("home.yaml", []byte(doc), "")
	if err != nil {
		t.Fatal(err)
	}
	got := string(p.Servers[0].Tools[0].Schemas.Input())
	for _, want := range []string{`"enum":["on","off"]`, `"y":{`, `"required":["state","y"]`} {
		if !strings.Contains(got, want) {
			t.Errorf("schema %s lacks %s", got, want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	long := strings.Repeat("x", MaxNameBytes+1)
	tests := []struct {
		name    string
		doc     string
		wantErr []string // every fragment must appear in the error
	}{
		{"empty file", "  \n", []string{"bad.json", "empty file"}},
		{"not json or yaml", "{\"servers\": [", []string{"bad.json"}},
		{"no tools", `{"servers":[]}`, []string{"no tools"}},
		{"both shapes", `{"servers":[{"name":"a","tools":[{"name":"x"}]}],"tools":[{"name":"y"}]}`, []string{"both"}},
		{"wrong type", `{"servers":[{"name":"a","tools":[{"name":5}]}]}`, []string{"bad.json", `server "a": tool #1`, "line 1, column 42", "name: want a string, got a number"}},
		{"tools not a list", `{"servers":[{"name":"a","tools":{"name":"x"}}]}`, []string{`server "a"`, "tools: want an array, got an object"}},
		{"server not an object", `{"servers":["a"]}`, []string{"a server: want an object, got a string"}},
		{"syntax error placed", "{\n  \"servers\": [\n    {\"name\": \"a\", \"tools\": [{\"name\": \"x\",}]}\n  ]\n}", []string{"bad.json", `server "a": tool #1 "x"`, "line 3, column 41"}},
		{"ends early", `{"servers":[{"name":"a","tools":[{"name":"x"}`, []string{"bad.json", "ends early"}},
		{"data after the object", `{"tools":[{"name":"x"}]} {}`, []string{"bad.json", "more data after"}},
		{"invalid UTF-8", "{\"tools\":[{\"name\":\"x\",\"description\":\"caf\xe9\"}]}", []string{"bad.json", `tool #1 "x"`, "UTF-8"}},
		{"server named after its tools", `{"servers":[{"tools":[{"name":"x","desc":"d"}],"name":"late"}]}`, []string{`server "late": tool #1 "x"`, `"desc"`}},
		{"tool named after the problem", `{"tools":[{"description":5,"name":"late"}]}`, []string{`tool #1 "late"`, "description: want a string"}},
		{"empty name", `{"servers":[{"name":"gh","tools":[{"name":" "}]}]}`, []string{"bad.json", `server "gh"`, "tool #1", "name is empty"}},
		{"duplicate", `{"servers":[{"name":"gh","tools":[{"name":"a"},{"name":"a"}]}]}`, []string{`server "gh"`, `tool #2 "a"`, "repeated"}},
		{"control character", `{"servers":[{"name":"gh","tools":[{"name":"a\u0007b"}]}]}`, []string{`server "gh"`, "control character U+0007"}},
		{"name too long", `{"servers":[{"name":"gh","tools":[{"name":"` + long + `"}]}]}`, []string{"over the limit of 256"}},
		{"schema not object", `{"servers":[{"name":"gh","tools":[{"name":"a","inputSchema":[1]}]}]}`, []string{`tool #1 "a"`, "inputSchema is present but not a JSON object"}},
		{"annotations not an object", `{"servers":[{"name":"gh","tools":[{"name":"a","annotations":[true]}]}]}`, []string{`tool #1 "a"`, "annotations must be an object"}},
		{"hint a string", `{"servers":[{"name":"gh","tools":[{"name":"a","annotations":{"destructiveHint":"true"}}]}]}`, []string{`tool #1 "a"`, `annotations.destructiveHint must be true or false, not "true"`}},
		{"hint a number", `{"servers":[{"name":"gh","tools":[{"name":"a","annotations":{"title":"A","readOnlyHint":1}}]}]}`, []string{"annotations.readOnlyHint must be true or false, not 1"}},
		{"title not a string", `{"servers":[{"name":"gh","tools":[{"name":"a","annotations":{"title":false}}]}]}`, []string{"annotations.title must be a string"}},
		{"yaml hint placed", "tools:\n  - name: a\n    annotations: {readOnlyHint: \"yes\"}\n", []string{`tool #1 "a"`, `line 3, column 5: annotations.readOnlyHint must be true or false, not "yes"`}},
		{"schema string", `{"servers":[{"name":"gh","tools":[{"name":"a","inputSchema":"x"}]}]}`, []string{"inputSchema"}},
		{"empty server name", `{"servers":[{"name":"","tools":[{"name":"a"}]}]}`, []string{"server name is empty"}},
		{"yaml bad", "servers:\n  - name: a\n   tools: [", []string{"bad.json"}},
		// A YAML file's errors name its own lines, not the converted
		// JSON's (one line, keys sorted): "line 1, column 101" before.
		{"yaml wrong type placed", "servers:\n  - name: s1\n    tools:\n      - name: ok_tool\n        description: Fine.\n      - name: bad\n        description: 5\n",
			[]string{`server "s1": tool #2 "bad"`, "line 7, column 9: description: want a string, got a number"}},
		{"yaml unknown key placed", "tools:\n  - name: a\n    descripton: x\n", []string{`tool #1 "a"`, `line 3, column 5: key "descripton" is unknown`}},
		{"task support unknown", `{"servers":[{"name":"gh","tools":[{"name":"a","execution":{"taskSupport":"always"}}]}]}`, []string{`server "gh": tool #1 "a"`, `execution.taskSupport: want one of forbidden, optional, required, got "always"`}},
		{"execution key unknown", `{"servers":[{"name":"gh","tools":[{"name":"a","execution":{"tasksupport":"required"}}]}]}`, []string{`tool #1 "a"`, `key "tasksupport" is unknown (did you mean "taskSupport"?)`}},
		{"execution not an object", `{"servers":[{"name":"gh","tools":[{"name":"a","execution":"required"}]}]}`, []string{`tool #1 "a"`, "execution: want an object, got a string"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Parse("bad.json", []byte(tt.doc), "")
			if err == nil {
				_, err = New([]Part{p})
			}
			if err == nil {
				t.Fatalf("Parse+New(%s) = nil error, want one containing %q", tt.doc, tt.wantErr)
			}
			for _, frag := range tt.wantErr {
				if !strings.Contains(err.Error(), frag) {
					t.Errorf("error %q does not contain %q", err, frag)
				}
			}
		})
	}
}

// TestTaskSupport: a tool's execution.taskSupport is read as a
// tools/list entry has it, and written back; a tool without one has
// none.
func TestTaskSupport(t *testing.T) {
	for _, tt := range []struct {
		execution string
		want      TaskSupport
	}{
		{``, TasksForbidden},
		{`,"execution":{}`, TasksForbidden},
		{`,"execution":{"taskSupport":"forbidden"}`, TasksForbidden},
		{`,"execution":{"taskSupport":"optional"}`, TasksOptional},
		{`,"execution":{"taskSupport":"required"}`, TasksRequired},
	} {
		p, err := Parse("t.json", []byte(`{"tools":[{"name":"a"`+tt.execution+`}]}`), "s")
		if err != nil {
			t.Fatal(err)
		}
		got := p.Servers[0].Tools[0]
		if got.Tasks != tt.want {
			t.Errorf("%s: tasks %s, want %s", tt.execution, got.Tasks, tt.want)
		}
		out, err := json.Marshal(got)
		if wantOut := `"execution":{"taskSupport":"` + tt.want.String() + `"}`; err != nil || strings.Contains(string(out), wantOut) != (tt.want != TasksForbidden) {
			t.Errorf("%s: written as %s", tt.execution, out)
		}
	}
}

func TestWarnings(t *testing.T) {
	doc := `{"servers":[{"name":"rapid api","tools":[
		{"name":"/v1/nutrition","description":"Nutrition facts."},
		{"name":"Get Channel Clips"},
		{"name":"ok_name","description":"` + strings.Repeat("d", MaxDescEmbedBytes+1) + `"},
		{"name":"hinted","description":"Hinted.","annotations":{"readonlyHint":true,"x-cost":3,"readOnlyHint":null,"title":"T"}}]}]}`
	p, err := Parse("real.json", []byte(doc), "")
	if err != nil {
		t.Fatal(err)
	}
	c, err := New([]Part{p})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if c.Len() != 4 {
		t.Fatalf("Len() = %d, want 4: warnings must not drop tools", c.Len())
	}
	var got []string
	for _, w := range c.Warnings() {
		got = append(got, w.Tool+": "+w.Message)
	}
	joined := strings.Join(got, "\n")
	for _, want := range []string{"/v1/nutrition: name is outside", "Get Channel Clips: name is outside", "Get Channel Clips: empty description", "ok_name: description is 8193 bytes",
		`hinted: annotation "readonlyHint" is not one MCP defines, and no client reads it (did you mean "readOnlyHint"?)`, `hinted: annotation "x-cost" is not one MCP defines`} {
		if !strings.Contains(joined, want) {
			t.Errorf("warnings %q lack %q", joined, want)
		}
	}
}

func TestBareToolsList(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "everything.json")
	if err := os.WriteFile(path, []byte(`{"tools":[{"name":"echo","description":"Echo back"}],"nextCursor":""}`), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := load([]string{path}, "")
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Tool(0).ID(); got != "everything/echo" {
		t.Errorf("ID() = %q, want everything/echo (server from the file name)", got)
	}
	c, err = load([]string{path}, "demo")
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Tool(0).ID(); got != "demo/echo" {
		t.Errorf("ID() = %q, want demo/echo (server from --server)", got)
	}
	if _, err := load([]string{filepath.Join(dir, "missing.json")}, ""); err == nil || !strings.Contains(err.Error(), "missing.json") {
		t.Errorf("Load(missing) error = %v, want one naming the file", err)
	}
}

func TestResolve(t *testing.T) {
	doc := `{"servers":[
		{"name":"github","tools":[{"name":"create_issue"},{"name":"search"}]},
		{"name":"gitlab","tools":[{"name":"create_issue"}]},
		{"name":"api","tools":[{"name":"/v1/nutrition"},{"name":"v1/x"}]},
		{"name":"api/v1","tools":[{"name":"x"}]}]}`
	p, err := Parse("t.json", []byte(doc), "")
	if err != nil {
		t.Fatal(err)
	}
	c, err := New([]Part{p})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		ref     string
		want    string
		wantErr error
	}{
		{"search", "github/search", nil},
		{"github/create_issue", "github/create_issue", nil},
		{"gitlab/create_issue", "gitlab/create_issue", nil},
		{"create_issue", "", ErrAmbiguousTool},
		{"/v1/nutrition", "api//v1/nutrition", nil},
		{"api//v1/nutrition", "api//v1/nutrition", nil},
		{"v1/x", "api/v1/x", nil},          // the bare name is tried first
		{"api/v1/x", "", ErrAmbiguousTool}, // "api"+"v1/x" and "api/v1"+"x"
		{"nope", "", ErrUnknownTool},
		{"github/nope", "", ErrUnknownTool},
	}
	for _, tt := range tests {
		i, err := c.Resolve(tt.ref)
		if !errors.Is(err, tt.wantErr) {
			t.Errorf("Resolve(%q) error = %v, want %v", tt.ref, err, tt.wantErr)
			continue
		}
		if err == nil && c.Tool(i).ID() != tt.want {
			t.Errorf("Resolve(%q) = %q, want %q", tt.ref, c.Tool(i).ID(), tt.want)
		}
	}
	// An ambiguous reference names every server it could mean.
	for ref, want := range map[string]string{"create_issue": `["github" "gitlab"]`, "api/v1/x": `["api" "api/v1"]`} {
		if _, err := c.Resolve(ref); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Resolve(%q) = %v, want an error naming servers %s", ref, err, want)
		}
	}
	for ref, want := range map[string]bool{"github/search": true, "api/v1/x": false, "api//v1/nutrition": true, "search": false, "/x": false, "": false} {
		if i, ok := c.ByID(ref); ok != want || ok && c.Tool(i).ID() != ref {
			t.Errorf("ByID(%q) = %d, %v; want found %v", ref, i, ok, want)
		}
	}
}

func TestText(t *testing.T) {
	tool := Tool{
		Server:      "github",
		Name:        "listIssues",
		Title:       "List issues",
		Description: "List issues in a repository.",
		Schemas: MakeSchemas([]byte(`{"type":"object","properties":{
			"state":{"type":"string","description":"Filter by state.","enum":["open","closed"]},
			"per_page":{"type":"integer"},
			"filter":{"type":"object","properties":{"label_name":{"type":"array","items":{"type":"string","enum":["bug","docs"]}}}}}}`), nil, nil),
	}
	got := tool.Text()
	want := "listIssues (list issues). List issues. List issues in a repository. " +
		"Parameters: filter; label_name (label name); per_page (per page); state: Filter by state. " +
		"Values: bug, docs, open, closed Server: github."
	if got != want {
		t.Errorf("Text() =\n%q\nwant\n%q", got, want)
	}
	// A malformed or hostile schema must not panic or loop; it contributes nothing.
	for _, schema := range []string{`{"properties":5}`, `{"properties":{"a":7}}`, `{"properties":{"a":{"enum":"x","items":3}}}`} {
		tool.Schemas = MakeSchemas([]byte(schema), nil, nil)
		_ = tool.Text()
	}
}

func TestLenientPart(t *testing.T) {
	strict, _ := Parse("files.json", []byte(`{"servers":[{"name":"a","tools":[{"name":"x"}]}]}`), "")
	up := Part{Source: "upstream:b", Lenient: true, Servers: []Server{{Name: "b", Tools: []Tool{
		{Name: "ok"}, {Name: ""}, {Name: "ok"}, {Name: "bad", Schemas: MakeSchemas([]byte(`[1]`), nil, nil)},
	}}, {Name: "", Tools: []Tool{{Name: "y"}}}}}
	c, err := New([]Part{strict, up})
	if err != nil {
		t.Fatalf("New with a lenient part: %v", err)
	}
	if c.Len() != 2 {
		t.Errorf("Len() = %d, want 2 (a/x and b/ok)", c.Len())
	}
	var got []string
	for _, w := range c.Skipped() {
		got = append(got, w.Tool+": "+w.Message)
	}
	joined := strings.Join(got, "\n")
	for _, want := range []string{": name is empty", "ok: name repeated", "bad: inputSchema", ": server name is empty"} {
		if !strings.Contains(joined, want) {
			t.Errorf("Skipped() = %q, lacks %q", joined, want)
		}
	}
}

// TestRepeatSaysWhereTheFirstCameFrom: a tool that a catalog file and an
// upstream of the same server both define is served as the file says; the
// upstream's is skipped saying so. Two files defining it is an error that
// names both.
func TestRepeatSaysWhereTheFirstCameFrom(t *testing.T) {
	file, _ := Parse("reviewed.json", []byte(`{"servers":[{"name":"gh","tools":[{"name":"echo","description":"Reviewed text."}]}]}`), "")
	up := Part{Source: "upstream:gh", Lenient: true, Servers: []Server{{Name: "gh", Tools: []Tool{{Name: "echo", Description: "Upstream text."}, {Name: "only_up"}}}}}
	c, err := New([]Part{file, up})
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := c.Lookup("gh", "echo"); !ok || c.Tools()[r].Description != "Reviewed text." {
		t.Errorf("gh/echo is not the file's definition")
	}
	if sk := c.Skipped(); len(sk) != 1 || sk[0].Tool != "echo" || sk[0].Message != "name defined by reviewed.json already" {
		t.Errorf("Skipped() = %+v, want gh/echo skipped naming reviewed.json", sk)
	}
	other, _ := Parse("other.json", []byte(`{"servers":[{"name":"gh","tools":[{"name":"echo","description":"Another."}]}]}`), "")
	if _, err := New([]Part{file, other}); err == nil || !strings.Contains(err.Error(), "other.json") || !strings.Contains(err.Error(), "name defined by reviewed.json already") {
		t.Errorf("two files defining gh/echo: %v, want an error naming both", err)
	}
}

// TestMaxTools: a catalog over the limit is refused, counting every part.
func TestMaxTools(t *testing.T) {
	defer func(n int) { maxTools = n }(maxTools)
	maxTools = 2
	a := Part{Source: "a.json", Servers: []Server{{Name: "a", Tools: []Tool{{Name: "x"}, {Name: "y"}}}}}
	b := Part{Source: "b.json", Servers: []Server{{Name: "b", Tools: []Tool{{Name: "z"}}}}}
	if _, err := New([]Part{a}); err != nil {
		t.Fatalf("2 tools: %v", err)
	}
	_, err := New([]Part{a, b})
	if err == nil || !strings.Contains(err.Error(), "3 tools, more than the 2") {
		t.Fatalf("3 tools: err = %v", err)
	}
	// A file is bounded as it is read, on one core or on every core.
	defer func(from int) { splitFrom = from }(splitFrom)
	for _, from := range []int{0, math.MaxInt} {
		splitFrom = from
		_, err = Parse("c.json", []byte(`{"servers":[{"name":"a","tools":[{"name":"x"},{}]},{"name":"b","tools":[{"name":"z"}]}]}`), "")
		if err == nil || !strings.Contains(err.Error(), "catalog c.json: more than the 2 tools a catalog may hold") {
			t.Errorf("3 tools in a file: err = %v", err)
		}
		_, err = Parse("c.json", []byte(`{"servers":[{},null,{"name":"b","tools":[{"name":"z"}]}]}`), "")
		if err == nil || !strings.Contains(err.Error(), "catalog c.json: more than the 2 servers a catalog may hold") {
			t.Errorf("3 servers in a file: err = %v", err)
		}
	}
}

// TestRecursiveSchemaIsFlaggedAtLoad: a schema whose $refs cannot be
// inlined within bounds is a catalog warning before anyone renders it.
func TestRecursiveSchemaIsFlaggedAtLoad(t *testing.T) {
	tests := []struct {
		name, schema, want string
	}{
		{"self", `{"type":"object","properties":{"next":{"$ref":"#"}}}`, "recursive"},
		{"through a definition", `{"type":"object","properties":{"n":{"$ref":"#/$defs/n"}},"$defs":{"n":{"type":"object","properties":{"c":{"type":"array","items":{"$ref":"#/$defs/n"}}}}}}`, "recursive"},
		{"a diamond", diamond(8, 5), "over 2000"},
		{"shared, small", `{"type":"object","properties":{"a":{"$ref":"#/$defs/x"},"b":{"$ref":"#/$defs/x"}},"$defs":{"x":{"type":"string"}}}`, ""},
		{"leading nowhere", `{"type":"object","properties":{"a":{"$ref":"#/$defs/nope"}},"$defs":{"x":{"type":"string"}}}`, `$ref "#/$defs/nope" leads nowhere`},
		{"remote, not ours to resolve", `{"type":"object","properties":{"a":{"$ref":"https://example.com/a.json"}}}`, ""},
		// A key spelt with escapes is the key to every reader.
		{"escaped", `{"type":"object","properties":{"next":{"\u0024ref":"#"}}}`, "recursive"},
		{"escaped in part", `{"type":"object","properties":{"a":{"$r\u0065f":"#/$defs/nope"}}}`, `$ref "#/$defs/nope" leads nowhere`},
		{"escapes that spell no letter", `{"type":"object","description":"\u003cb\u003e \u00e9","properties":{"a":{"type":"string"}}}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := schemaWarnings(t, tt.schema); (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
				t.Errorf("warnings %q, want one saying %q", got, tt.want)
			}
		})
	}
}

// TestPatternGoCannotReadIsFlagged: an input schema pattern that Go's
// regexp refuses leaves call_tool's argument check off for the tool (the
// schema does not resolve), so loading says which pattern and where. A
// parameter called "pattern", or a pattern in an example, is no keyword.
func TestPatternGoCannotReadIsFlagged(t *testing.T) {
	tests := []struct {
		name, schema, want string
	}{
		{"lookahead", `{"type":"object","properties":{"q":{"type":"string","pattern":"^(?=.*[0-9]).{8,}$"}}}`, `pattern "^(?=.*[0-9]).{8,}$" at "/properties/q/pattern" is not one Go's regular expressions read (invalid or unsupported Perl syntax)`},
		{"a backreference in an item's schema", `{"type":"object","properties":{"l":{"type":"array","items":{"type":"string","pattern":"(a)\\1"}}}}`, `at "/properties/l/items/pattern"`},
		{"a property name pattern", `{"type":"object","patternProperties":{"^(?!x_)":{"type":"string"}}}`, `pattern "^(?!x_)" at "/patternProperties"`},
		{"a definition's, its name escaped", `{"type":"object","$defs":{"a/b":{"type":"string","pattern":"\\p{Script=Latin}"}}}`, `at "/$defs/a~1b/pattern" is not one Go's regular expressions read (invalid character class range)`},
		{"RE2 reads it", `{"type":"object","properties":{"q":{"type":"string","pattern":"^[a-z]+\\d{2,}$"}}}`, ""},
		{"a parameter called pattern", `{"type":"object","properties":{"pattern":{"type":"string","description":"A glob"}}}`, ""},
		{"data, not a schema", `{"type":"object","properties":{"q":{"type":"object","default":{"pattern":"(?=x)"},"examples":[{"pattern":"(?<=y)"}]}}}`, ""},
		{"a pattern that is no string", `{"type":"object","properties":{"pattern":{"pattern":5}}}`, ""},
		// The key spelt with escapes, as every reader reads it.
		{"escaped", `{"type":"object","properties":{"q":{"type":"string","\u0070attern":"(?=x)"}}}`, `at "/properties/q/pattern"`},
		{"a property name pattern, escaped", `{"type":"object","p\u0061tternProperties":{"^(?!x_)":{}}}`, `pattern "^(?!x_)" at "/patternProperties"`},
		{"patterns past what is read of an upstream's", `{"type":"object","properties":{"q":{"type":"string","pattern":"(\\w+\\s*){1,1000}(\\w+\\s*){1,1000}(\\w+\\s*){1,1000}"}}}`, `at "/properties/q/pattern" takes the schema's patterns past what is read of an upstream's`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := schemaWarnings(t, tt.schema); (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
				t.Errorf("warnings %q, want one saying %q", got, tt.want)
			}
		})
	}
}

// schemaWarnings is what loading warns of a tool whose inputSchema is
// schema, the warnings run together.
func schemaWarnings(t *testing.T, schema string) string {
	t.Helper()
	cat, err := New([]Part{{Source: "f.json", Servers: []Server{{Name: "s", Tools: []Tool{{Name: "t", Description: "d", Schemas: MakeSchemas(json.RawMessage(schema), nil, nil)}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	var got string
	for _, w := range cat.Warnings() {
		got += w.Message
	}
	return got
}

// diamond is levels of definitions, each referring width times to the next.
func diamond(width, levels int) string {
	var defs []string
	for l := range levels {
		var props []string
		for i := range width {
			props = append(props, fmt.Sprintf(`"p%d":{"$ref":"#/$defs/l%d"}`, i, l+1))
		}
		defs = append(defs, fmt.Sprintf(`"l%d":{"type":"object","properties":{%s}}`, l, strings.Join(props, ",")))
	}
	defs = append(defs, fmt.Sprintf(`"l%d":{"type":"string"}`, levels))
	return fmt.Sprintf(`{"type":"object","properties":{"root":{"$ref":"#/$defs/l0"}},"$defs":{%s}}`, strings.Join(defs, ","))
}

// TestKeysAreExact: keys encoding/json would drop or merge are errors that
// name the file, server and tool.
func TestKeysAreExact(t *testing.T) {
	tests := []struct {
		name, doc string
		want      []string
	}{
		{"snake_case schema", `{"servers":[{"name":"s","tools":[{"name":"t","input_schema":{"type":"object"}}]}]}`,
			[]string{"f.json", `server "s"`, `tool #1 "t"`, `"input_schema"`, `did you mean "inputSchema"`}},
		{"singular annotation", `{"servers":[{"name":"s","tools":[{"name":"a"},{"name":"t","annotation":{"destructiveHint":true}}]}]}`,
			[]string{`tool #2 "t"`, `"annotation"`, `"annotations"`}},
		{"key in another case", `{"tools":[{"Name":"t"}]}`, []string{`"Name"`, `did you mean "name"`}},
		{"unknown server key", `{"servers":[{"name":"s","tool":[]}]}`, []string{`server "s"`, `"tool"`}},
		{"unknown file key", `{"tools":[{"name":"t"}],"server":"x"}`, []string{`"server"`, "f.json"}},
		{"duplicate key in a tool", `{"tools":[{"name":"t","description":"a","description":"b"}]}`, []string{`"description"`, "repeated", `tool #1 "t"`, "/tools/0"}},
		{"duplicate key deep in a schema", `{"tools":[{"name":"t","inputSchema":{"properties":{"a":{"type":"string","type":"number"}}}}]}`, []string{`"type"`, "repeated", "/tools/0/inputSchema/properties/a"}},
		{"duplicate key in a schema", `{"tools":[{"name":"t","inputSchema":{"type":"object","required":["a"],"required":[]}}]}`, []string{`"required"`, "repeated"}},
		{"yaml, snake_case", "servers:\n  - name: s\n    tools:\n      - name: t\n        input_schema: {type: object}\n", []string{`"input_schema"`, `tool #1 "t"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("f.json", []byte(tt.doc), "")
			if err == nil {
				t.Fatalf("Parse accepted %s", tt.doc)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %s", err, w)
				}
			}
		})
	}
	// A saved tools/list answer, with the MCP fields this service ignores, loads.
	ok := `{"tools":[{"name":"t","description":"d","inputSchema":{"type":"object"},"_meta":{"x":1},"icons":[],"execution":{}}],"nextCursor":"c","_meta":{}}`
	if _, err := Parse("f.json", []byte(ok), ""); err != nil {
		t.Errorf("a tools/list answer: %v", err)
	}
}

// load reads and combines catalog files, as the service's loader does.
func load(paths []string, server string) (*Catalog, error) {
	parts, err := ReadParts(paths, server)
	if err != nil {
		return nil, err
	}
	return New(parts)
}

func TestBound(t *testing.T) {
	bigSchema := json.RawMessage(`{"type":"object","properties":{` + strings.Repeat(`"p":{"type":"string"},`, MaxUntrustedSchemaBytes/20) + `"q":{}}}`)
	tests := []struct {
		name        string
		in          Tool
		wantClipped bool
		check       func(Tool) bool
	}{
		{"small tool unchanged", Tool{Name: "a", Description: "reads a file", Schemas: MakeSchemas(json.RawMessage(`{"type":"object"}`), nil, nil)}, false,
			func(t Tool) bool {
				return t.Description == "reads a file" && string(t.Schemas.Input()) == `{"type":"object"}`
			}},
		{"long description clipped and marked", Tool{Name: "a", Description: strings.Repeat("é", MaxUntrustedDescBytes)}, true,
			func(t Tool) bool {
				return len(t.Description) < MaxUntrustedDescBytes+100 && utf8.ValidString(t.Description) && strings.Contains(t.Description, "over the 16384-byte limit")
			}},
		{"huge input schema replaced by an open object", Tool{Name: "a", Description: "x", Schemas: MakeSchemas(bigSchema, nil, nil)}, true,
			func(t Tool) bool {
				var m map[string]any
				in := t.Schemas.Input()
				return json.Unmarshal(in, &m) == nil && m["type"] == "object" && m["properties"] == nil && len(in) < 1024
			}},
		{"huge output schema too", Tool{Name: "a", Description: "x", Schemas: MakeSchemas(nil, bigSchema, nil)}, true,
			func(t Tool) bool { return len(t.Schemas.Output()) < 1024 }},
		{"long title clipped, not marked as a text the answer quotes", Tool{Name: "a", Description: "x", Title: strings.Repeat("t", 4000)}, false,
			func(t Tool) bool { return len(t.Title) <= MaxUntrustedTitleBytes+len("…") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Bound(tt.in)
			if Clipped(got) != tt.wantClipped || !tt.check(got) {
				t.Errorf("Bound(%.60s…) = clipped %v, %.200v; want clipped %v", tt.in.Description, Clipped(got), got, tt.wantClipped)
			}
			// An upstream's schemas are bounded before they are coded.
			s := tt.in.Schemas
			if b := BoundSchemas(s.Input(), s.Output(), s.Annotations()); b != got.Schemas {
				t.Errorf("BoundSchemas = %q, Bound's %q", b.coded, got.Schemas.coded)
			}
			if tt.wantClipped {
				cat, err := New([]Part{{Source: "upstream:u", Lenient: true, Servers: []Server{{Name: "u", Tools: []Tool{got}}}}})
				if err != nil {
					t.Fatal(err)
				}
				found := false
				for _, w := range cat.Warnings() {
					found = found || strings.Contains(w.Message, "clipped")
				}
				if !found {
					t.Errorf("no catalog warning names the clipped tool: %v", cat.Warnings())
				}
			}
		})
	}
}

// An id is at most two names long: the longest are found, and anything
// longer, however many "/" it has, is not looked up at all.
func TestByIDLongest(t *testing.T) {
	server, name := strings.Repeat("s", MaxNameBytes), strings.Repeat("n", MaxNameBytes)
	c, err := New([]Part{{Source: "t", Servers: []Server{{Name: server, Tools: []Tool{{Name: name}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	if i, ok := c.ByID(server + "/" + name); !ok || i != 0 {
		t.Errorf("ByID(the longest id) = %d, %v", i, ok)
	}
	if _, ok := c.ByID(strings.Repeat("/", 1<<20)); ok {
		t.Error("ByID(a megabyte of slashes) found a tool")
	}
	if _, err := c.Resolve(server + "/" + name + "/"); !errors.Is(err, ErrUnknownTool) {
		t.Errorf("Resolve(one byte over) = %v, want ErrUnknownTool", err)
	}
}

// TestHashCoversEveryField: changing any field of any tool, or moving
// bytes from one field to the next, changes the hash; reformatting the
// file does not.
func TestHashCoversEveryField(t *testing.T) {
	base := Tool{Server: "s", Name: "n", Title: "t", Description: "d",
		Schemas: MakeSchemas([]byte(`{"type":"object"}`), []byte(`{"type":"string"}`), []byte(`{"readOnlyHint":true}`))}
	want := hashTools([]Tool{base})
	v := reflect.ValueOf(&base).Elem()
	for i := range v.NumField() {
		var changes []Tool
		switch f := v.Field(i); {
		case f.Kind() == reflect.String:
			changed := base
			reflect.ValueOf(&changed).Elem().Field(i).SetString(f.String() + "x")
			changes = append(changes, changed)
		case f.Type() == reflect.TypeFor[Schemas]():
			in, out, ann := base.Schemas.Input(), base.Schemas.Output(), base.Schemas.Annotations()
			x := []byte(`{"x":1}`)
			for _, s := range []Schemas{MakeSchemas(x, out, ann), MakeSchemas(in, x, ann), MakeSchemas(in, out, x),
				MakeSchemas(nil, in, ann), MakeSchemas(in, nil, out)} { // and moved to the next
				changed := base
				changed.Schemas = s
				changes = append(changes, changed)
			}
		case f.Type() == reflect.TypeFor[TaskSupport]():
			for _, ts := range []TaskSupport{TasksOptional, TasksRequired} {
				changed := base
				changed.Tasks = ts
				changes = append(changes, changed)
			}
		default:
			t.Fatalf("field %s: kind %s: hashTools must learn it", v.Type().Field(i).Name, f.Kind())
		}
		for j, changed := range changes {
			if hashTools([]Tool{changed}) == want {
				t.Errorf("change %d of %s leaves the hash", j, v.Type().Field(i).Name)
			}
		}
	}
	if a, b := hashTools([]Tool{{Name: "ab", Description: "c"}}), hashTools([]Tool{{Name: "a", Description: "bc"}}); a == b {
		t.Error("bytes moved between fields leave the hash")
	}
	compact, _ := Parse("a.json", []byte(`{"tools":[{"name":"x","inputSchema":{"type":"object","properties":{"q":{"type":"string"}}}}]}`), "s")
	indented, _ := Parse("b.yaml", []byte("{\n  \"tools\": [\n    {\"name\": \"x\",\n     \"inputSchema\": {\"type\": \"object\",\n       \"properties\": {\"q\": {\"type\": \"string\"}}}}]}\n"), "s")
	a, errA := New([]Part{compact})
	b, errB := New([]Part{indented})
	if errA != nil || errB != nil {
		t.Fatal(errA, errB)
	}
	if a.Hash() != b.Hash() {
		t.Error("an indented file hashes unlike its compact form")
	}
	// New hashes as it adds; a subset (hashTools) must agree with it.
	d, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	if got := hashTools(d.tools); got != d.Hash() {
		t.Errorf("hashTools(default) = %s, New's hash %s", got, d.Hash())
	}
	if got := string(b.Tool(0).Schemas.Input()); got != `{"type":"object","properties":{"q":{"type":"string"}}}` {
		t.Errorf("indented schema kept as %s, want it compact", got)
	}
}

// TestErrorsAreBounded: a megabyte key or name, in a file or from an
// upstream (a lenient part, whose bad tools become warnings), is quoted
// clipped: no error or warning is a megabyte of log line or status.
func TestErrorsAreBounded(t *testing.T) {
	big := strings.Repeat("n", 1<<20)
	for _, tt := range []struct{ name, doc string }{
		{"unknown key", `{"servers":[{"name":"s","tools":[{"name":"t","` + big + `":1}]}]}`},
		{"long tool name with an unknown key", `{"servers":[{"name":"s","tools":[{"name":"` + big + `","bad":1}]}]}`},
		{"long tool name", `{"servers":[{"name":"s","tools":[{"name":"` + big + `"}]}]}`},
		{"long server name", `{"servers":[{"name":"` + big + `","tools":[{"name":"t"}]}]}`},
		{"repeated long key", `{"tools":[{"name":"t","inputSchema":{"` + big + `":1,"` + big + `":2}}]}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Parse("f.json", []byte(tt.doc), "")
			if err == nil {
				_, err = New([]Part{p})
			}
			if err == nil {
				t.Fatal("accepted")
			}
			if len(err.Error()) > 2048 {
				t.Errorf("error is %d bytes", len(err.Error()))
			}
		})
	}
	up := Part{Source: "upstream:u", Lenient: true, Servers: []Server{{Name: "u", Tools: []Tool{{Name: big}, {Name: "ok"}}}}}
	c, err := New([]Part{up})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range c.Skipped() {
		if len(w.String()) > 2048 || len(w.Tool) > MaxNameBytes+len("…") {
			t.Errorf("warning of %d bytes (tool %d)", len(w.String()), len(w.Tool))
		}
	}
	if len(c.Skipped()) != 1 {
		t.Errorf("%d skipped, want 1", len(c.Skipped()))
	}
}

// TestBytes: a catalog's bytes are its tools' text and schemas as held
// (compact), and a subset's are its own tools'.
func TestBytes(t *testing.T) {
	part, err := Parse("b.json", []byte(`{"servers":[{"name":"s","tools":[
		{"name":"a","description":"bc","inputSchema":{ "type" : "object" }},
		{"name":"dd","title":"T","annotations":{"readOnlyHint":true}}]}]}`), "")
	if err != nil {
		t.Fatal(err)
	}
	c, err := New([]Part{part})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		rows []int
		want int
	}{
		{nil, 1 + 2 + len(`{"type":"object"}`) + 2 + 1 + len(`{"readOnlyHint":true}`)},
		{[]int{1}, 2 + 1 + len(`{"readOnlyHint":true}`)},
		{[]int{}, 0},
	} {
		got := c
		if tt.rows != nil {
			got = c.Subset(tt.rows)
		}
		if got.Bytes() != int64(tt.want) {
			t.Errorf("rows %v: %d bytes, want %d", tt.rows, got.Bytes(), tt.want)
		}
	}
}

// TestSame: a catalog loaded twice from the same files is the same; a
// changed tool, another source or a skipped tool makes another.
func TestSame(t *testing.T) {
	const doc = `{"servers":[{"name":"s","tools":[{"name":"a","description":"Adds."},{"name":"b","description":"Builds."}]}]}`
	load := func(source, data string, lenient bool) *Catalog {
		t.Helper()
		part, err := Parse(source, []byte(data), "")
		if err != nil {
			t.Fatal(err)
		}
		part.Lenient = lenient
		c, err := New([]Part{part})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	base := load("a.json", doc, false)
	for _, tt := range []struct {
		name string
		o    *Catalog
		want bool
	}{
		{"loaded again", load("a.json", doc, false), true},
		{"another source", load("b.json", doc, false), false},
		{"a description changed", load("a.json", strings.Replace(doc, "Builds.", "Bakes.", 1), false), false},
		{"tools reordered", load("a.json", `{"servers":[{"name":"s","tools":[{"name":"b","description":"Builds."},{"name":"a","description":"Adds."}]}]}`, false), false},
		{"a tool skipped", load("a.json", strings.Replace(doc, `]}]}`, `,{"name":"bad name!"}]}]}`, 1), true), false},
	} {
		if got := base.Same(tt.o); got != tt.want {
			t.Errorf("%s: Same = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestServerListedAgain: a server with two entries in one source is
// warned of (and served as one); in two sources it is a split catalog.
func TestServerListedAgain(t *testing.T) {
	entry := func(server, tool string) string {
		return `{"name":"` + server + `","tools":[{"name":"` + tool + `","description":"Does ` + tool + `."}]}`
	}
	file := func(entries ...string) string { return `{"servers":[` + strings.Join(entries, ",") + `]}` }
	tests := []struct {
		name  string
		files []string
		want  []string // the warnings' servers and messages
	}{
		{"once each", []string{file(entry("gh", "a"), entry("slack", "b"))}, nil},
		{"twice in one file", []string{file(entry("gh", "a"), entry("slack", "b"), entry("gh", "c"))},
			[]string{"gh: server listed again (entries 1 and 3 of this source); its tools are served as one server's"}},
		{"three times in one file", []string{file(entry("gh", "a"), entry("gh", "b"), entry("gh", "c"))},
			[]string{"gh: server listed again (entries 1 and 2 of this source); its tools are served as one server's",
				"gh: server listed again (entries 1 and 3 of this source); its tools are served as one server's"}},
		{"once in each of two files", []string{file(entry("gh", "a")), file(entry("gh", "b"))}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var parts []Part
			for i, f := range tt.files {
				p, err := Parse(fmt.Sprintf("f%d.json", i), []byte(f), "")
				if err != nil {
					t.Fatal(err)
				}
				parts = append(parts, p)
			}
			c, err := New(parts)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, w := range c.Warnings() {
				if w.Rule == "servers" && w.Tool == "" {
					got = append(got, w.Server+": "+w.Message)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("warnings %q, want %q", got, tt.want)
			}
			if want := strings.Count(strings.Join(tt.files, ""), `"tools"`); c.Len() != want {
				t.Errorf("%d tools, want %d: every entry's tools are served", c.Len(), want)
			}
		})
	}
}
