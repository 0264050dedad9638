package eval

import (
	"errors"
	"strings"
	"testing"

	"github.com/toolsearch/toolsearch/pkg/catalog"
)

// TestParseCasesKeys: a key the cases do not have, at any depth and in
// every format, is bad input naming it and where it is, never dropped (a
// typo in a case's request would measure another search); so is a key
// in another case, which encoding/json would take.
func TestParseCasesKeys(t *testing.T) {
	const ok = `{"id":"a","query":"merge a pull request","expected":["github/merge_pull_request"],"request":{"mode":"keyword","top_k":3}}`
	for _, tt := range []struct {
		source, data string
		want         string // in the error; "" for none
	}{
		{"c.jsonl", ok + "\n", ""},
		{"c.json", "[" + ok + "]", ""},
		{"c.yaml", "cases:\n- id: a\n  query: merge a pull request\n  expected: [github/merge_pull_request]\n", ""},
		{"c.jsonl", `{"id":"a","query":"q","expectd":["x"]}`, `c.jsonl:1: key "expectd" is unknown`},
		{"c.jsonl", ok + "\n" + `{"id":"b","query":"q","expected":["x"],"request":{"modee":"keyword"}}`, `c.jsonl:2: key "modee" in .request is unknown`},
		{"c.json", `[{"id":"a","Query":"q","expected":["x"]}]`, `key "Query" in [0] is unknown (did you mean "query"?)`},
		{"c.yaml", "- id: a\n  query: q\n  expected: [x]\n  request: {top_k: 3, modee: keyword}\n", `key "modee" in [0].request is unknown`},
		{"c.yaml", "cases:\n- id: a\n  query: q\n  expected: [x]\n  categroy: typo\n", `key "categroy" in .cases[0] is unknown`},
		{"c.yaml", "casez: []\n", `key "casez" is unknown`},
		// Types in JSON's words, not Go's ("Case.expected of type []string").
		{"c.jsonl", `{"id":"a","query":"q","expected":"github/x"}`, `c.jsonl:1: "expected" must be an array, got JSON string`},
		{"c.json", `[{"id":"a","query":5,"expected":["x"]}]`, `c.json: "[0].query" must be a string, got JSON number`},
		{"c.yaml", "cases:\n- id: a\n  query: q\n  expected: [x]\n- id: b\n  query: q\n  expected: [x, [y]]\n", `c.yaml: "cases[1].expected[1]" must be a string, got JSON array`},
	} {
		_, err := ParseCases(tt.source, []byte(tt.data))
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s %.60q: %v, want it read", tt.source, tt.data, err)
		case tt.want != "" && (!errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s %.60q: %v, want bad input naming %s", tt.source, tt.data, err, tt.want)
		}
	}
}

// TestResolveNamesTheFile: a case read from a file that expects a tool
// the catalog lacks is named by the file and its place in it, as every
// other error about a case is.
func TestResolveNamesTheFile(t *testing.T) {
	cat, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	cases, err := ParseCases("mine.jsonl", []byte("{\"id\":\"ok\",\"query\":\"q\",\"expected\":[\"create_issue\"]}\n{\"id\":\"a\",\"query\":\"q\",\"expected\":[\"slack/nope\"]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Resolve(cat, cases)
	if want := `mine.jsonl: case #2 "a": expected unknown tool "slack/nope"`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("%v; want %s", err, want)
	}
}

// TestResolveNames: an expected tool the catalog lacks fails the cases,
// with the tool it nearly names where there is one.
func TestResolveNames(t *testing.T) {
	cat, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		expected string
		want     string // in the error; "" for none
	}{
		{"github/create_issue", ""},
		{"create_issue", ""},
		{"github/create_isue", `expected unknown tool "github/create_isue" (did you mean "create_issue"?)`},
		{"Create_Issue", `(did you mean "create_issue"?)`},
		{"zzz_nothing", `expected unknown tool "zzz_nothing"`},
	} {
		_, err := Resolve(cat, []Case{{ID: "a", Query: "q", Expected: []string{tt.expected}}})
		if tt.want != "" && (err == nil || !strings.Contains(err.Error(), `case "a": expected `)) {
			t.Errorf("%s: %v, want the case named", tt.expected, err)
		}
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: %v, want it resolved", tt.expected, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: %v, want an error with %s", tt.expected, err, tt.want)
		case tt.want != "" && strings.HasPrefix(tt.expected, "zzz") && strings.Contains(err.Error(), "did you mean"):
			t.Errorf("%s: %v suggests a tool that is not near", tt.expected, err)
		}
	}
}
