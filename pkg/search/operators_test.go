package search

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseQuery(t *testing.T) {
	tests := []struct {
		in   string
		want parsedQuery
	}{
		{"list issues", parsedQuery{text: "list issues"}},
		{"+slack send a message", parsedQuery{text: "slack send a message", required: []string{"slack"}}},
		{"send +Slack ++dm", parsedQuery{text: "send Slack dm", required: []string{"slack", "dm"}}},
		{"call +4915123577723 now", parsedQuery{text: "call +4915123577723 now"}},
		{"C++ compiler + linker", parsedQuery{text: "C++ compiler + linker"}},
		{"select:a, b ,,c", parsedQuery{selected: []string{"a", "b", "c"}, isSelect: true}},
		{"  Select:x", parsedQuery{selected: []string{"x"}, isSelect: true}},
		{"select:", parsedQuery{isSelect: true}},
		{"please select: the best", parsedQuery{text: "please select: the best"}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, parseQuery(tt.in), cmp.AllowUnexported(parsedQuery{})); diff != "" {
			t.Errorf("parseQuery(%q) mismatch (-want +got):\n%s", tt.in, diff)
		}
	}
}

func FuzzParseQuery(f *testing.F) {
	for _, s := range []string{"+slack dm", "select:a,b", "+", "++", "+1 555", "SELECT:", "a +b +c", " two  spaces\tand tab ", "caf\u00e9\u00a0menu"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		p := parseQuery(q)
		if p.isSelect && (p.text != "" || len(p.required) > 0) {
			t.Fatalf("select query %q also has text or required terms: %+v", q, p)
		}
		for _, r := range p.required {
			if r == "" {
				t.Fatalf("empty required term from %q", q)
			}
		}
		// Without operators the text is the query's words joined by single
		// spaces, whether or not the fast path took it.
		if want := strings.Join(strings.Fields(q), " "); !p.isSelect && len(p.required) == 0 && p.text != want {
			t.Fatalf("parseQuery(%q).text = %q, want %q", q, p.text, want)
		}
	})
}
