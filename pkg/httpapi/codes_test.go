package httpapi

import (
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestErrorCodesDocumented: docs/api.md's table of error codes lists
// every code the HTTP API can answer, each with the statuses it comes
// with, and no code it cannot. A client branches on the code, so a code
// the table lacks, or names under another status, is a contract broken
// unseen. The codes are read from the source: errorf's and badRequest's
// literal codes (badRequest's are 400s, but CodeInputTooLarge, a 413)
// in this package and in search's.
func TestErrorCodesDocumented(t *testing.T) {
	inCode := map[string]map[int]bool{}
	add := func(code string, status int) {
		if inCode[code] == nil {
			inCode[code] = map[int]bool{}
		}
		inCode[code][status] = true
	}
	for _, dir := range []string{".", "../search"} {
		for _, call := range errorCalls(t, dir) {
			switch call.fn {
			case "errorf":
				add(call.code, call.status)
			case "badRequest":
				add(call.code, http.StatusBadRequest)
			}
		}
	}
	// Search's own, answered only through MCP's list_servers.
	delete(inCode, "invalid_limit")
	// writeError's mapping of search's RequestError: input_too_large is
	// a 413 wherever search raises it.
	delete(inCode, "input_too_large")
	add("input_too_large", http.StatusRequestEntityTooLarge)

	inDocs := documentedCodes(t)
	for _, code := range slices.Sorted(maps.Keys(inCode)) {
		want := slices.Sorted(maps.Keys(inCode[code]))
		got, ok := inDocs[code]
		switch {
		case !ok:
			t.Errorf("docs/api.md, Error codes: %s (%v) is not listed", code, want)
		case !slices.Equal(got, want):
			t.Errorf("docs/api.md, Error codes: %s is listed with %v; the code answers it with %v", code, got, want)
		}
	}
	for code := range inDocs {
		if _, ok := inCode[code]; !ok {
			t.Errorf("docs/api.md, Error codes: %s is listed, but nothing answers it", code)
		}
	}
	if len(inCode) < 40 {
		t.Errorf("found %d codes in the source: the parse missed them", len(inCode))
	}
}

type errorCall struct {
	fn, code string
	status   int
}

// errorCalls are the calls to errorf and badRequest in dir's non-test
// files whose code is a literal.
func errorCalls(t *testing.T, dir string) []errorCall {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var out []errorCall
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			fn, ok := call.Fun.(*ast.Ident)
			if !ok || (fn.Name != "errorf" && fn.Name != "badRequest") {
				return true
			}
			at := 0
			if fn.Name == "errorf" {
				at = 1
			}
			if len(call.Args) <= at {
				return true
			}
			lit, ok := call.Args[at].(*ast.BasicLit)
			if !ok {
				return true // a code passed on (writeError's re.Code)
			}
			code, _ := strconv.Unquote(lit.Value)
			if fn.Name == "badRequest" {
				out = append(out, errorCall{fn: fn.Name, code: code})
				return true
			}
			if _, ok := call.Args[0].(*ast.Ident); ok {
				statuses, ok := statusVaries[code]
				if !ok {
					t.Fatalf("%s: %s's status is a variable: list the statuses it takes in statusVaries", fset.Position(call.Pos()), code)
				}
				for _, s := range statuses {
					out = append(out, errorCall{fn: fn.Name, code: code, status: s})
				}
				return true
			}
			out = append(out, errorCall{fn: fn.Name, code: code, status: httpStatusOf(t, fset.Position(call.Pos()).String(), call.Args[0])})
			return true
		})
	}
	return out
}

// statusVaries gives the statuses of the codes whose status the source
// picks at run time.
var statusVaries = map[string][]int{
	"rebuild_failed": {http.StatusUnprocessableEntity, http.StatusServiceUnavailable},
}

// httpStatusOf is the HTTP status an expression names: http.StatusX or a
// number.
func httpStatusOf(t *testing.T, pos string, e ast.Expr) int {
	t.Helper()
	switch e := e.(type) {
	case *ast.BasicLit:
		n, err := strconv.Atoi(e.Value)
		if err == nil {
			return n
		}
	case *ast.SelectorExpr:
		for code := 100; code < 600; code++ {
			if name := http.StatusText(code); name != "" && "Status"+strings.NewReplacer(" ", "", "-", "", "'", "").Replace(name) == e.Sel.Name {
				return code
			}
		}
		// Names net/http spells unlike its text.
		if s, ok := map[string]int{"StatusRequestEntityTooLarge": 413, "StatusRequestURITooLong": 414}[e.Sel.Name]; ok {
			return s
		}
	}
	t.Fatalf("%s: cannot read the status of %T", pos, e)
	return 0
}

// documentedCodes reads docs/api.md's table of error codes: a row
// "| `code` | 400, 413 | ... |" per code.
func documentedCodes(t *testing.T) map[string][]int {
	t.Helper()
	data, err := os.ReadFile("../../docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(data), "\n### Error codes\n")
	if !ok {
		t.Fatal(`docs/api.md has no "### Error codes" section`)
	}
	table, _, _ = strings.Cut(table, "\n### ")
	row := regexp.MustCompile("(?m)^\\| `([a-z0-9_]+)` \\| ([0-9, ]+) \\|")
	out := map[string][]int{}
	for _, m := range row.FindAllStringSubmatch(table, -1) {
		if _, dup := out[m[1]]; dup {
			t.Errorf("docs/api.md, Error codes: %s is listed twice", m[1])
		}
		var statuses []int
		for _, s := range strings.Split(m[2], ",") {
			n, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil {
				t.Fatalf("docs/api.md, Error codes: %s: status %q", m[1], s)
			}
			statuses = append(statuses, n)
		}
		slices.Sort(statuses)
		out[m[1]] = statuses
	}
	if len(out) == 0 {
		t.Fatal("docs/api.md, Error codes: no rows read")
	}
	return out
}
