package search

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolsearch/toolsearch/pkg/access"
	"github.com/toolsearch/toolsearch/pkg/analysis"
	"github.com/toolsearch/toolsearch/pkg/catalog"
)

func TestParseQuery(t *testing.T) {
	tests := []struct {
		in   string
		want parsedQuery
	}{
		{"list issues", parsedQuery{text: "list issues"}},
		{"+slack send a message", parsedQuery{text: "slack send a message", required: []string{"slack"}}},
		{"send +Slack ++dm", parsedQuery{text: "send Slack dm", required: []string{"slack", "dm"}}},
		{"+slack send +Slack +SLACK", parsedQuery{text: "slack send Slack SLACK", required: []string{"slack"}}},
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

// holdsTermByLowering is what termMatcher.holds must answer: the text
// lower-cased as it reads (lowerFold).
func holdsTermByLowering(t *catalog.Tool, term string) bool {
	return strings.Contains(lowerFold(t.ID()+" "+t.Description), term)
}

func TestHoldsTerm(t *testing.T) {
	tool := &catalog.Tool{Server: "GitHub", Name: "create_Issue", Description: "Opens an ISSUE in a repository."}
	tests := []struct {
		term string
		want bool
	}{
		{"github", true},
		{"issue", true},
		{"create_issue", true},
		{"github/create", true}, // spans server and name
		{"issue opens", true},   // spans name and description
		{"repository.", true},
		{"repositoryx", false},
		{"gitlab", false},
		{"", true},
		{"\u212a", false},
	}
	for _, tt := range tests {
		var m termMatcher
		if got := m.holds(tool, tt.term); got != tt.want || got != holdsTermByLowering(tool, tt.term) {
			t.Errorf("holds(%q) = %v, want %v", tt.term, got, tt.want)
		}
	}
	// An ASCII term holds for the text without its accents, as query
	// words read the catalog's accented words; one with accents only as
	// written.
	factures := &catalog.Tool{Server: "compta", Name: "lister", Description: "Lister les factures impayées, avec leur Échéance; Straße."}
	for term, want := range map[string]bool{"impayees": true, "echeance": true, "strasse": true, "impayées": true, "impayèes": false, "echeancier": false} {
		var m termMatcher
		if got := m.holds(factures, term); got != want {
			t.Errorf("holds(%q) = %v, want %v", term, got, want)
		}
	}
	// U+212A, the Kelvin sign, lower-cases to an ASCII k.
	kelvin := &catalog.Tool{Server: "lab", Name: "temp", Description: "Reads \u212aelvin degrees."}
	var m termMatcher
	if !m.holds(kelvin, "kelvin") {
		t.Error(`holds("kelvin") = false for a text that lower-cases to it`)
	}
	// A character no reader sees splits no word, and a ligature reads as
	// its letters, as query words read them: "+delete" and "+file" hold.
	hidden := &catalog.Tool{Server: "fs", Name: "rm", Description: "De\u00adlete a \ufb01le."}
	for _, term := range []string{"delete", "file", lowerFold("+De\u200blete")[1:]} {
		if m := (termMatcher{}); !m.holds(hidden, term) {
			t.Errorf("holds(%q) = false for %q", term, hidden.Description)
		}
	}
}

// FuzzHoldsTerm checks termMatcher.holds against lower-casing the whole text.
func FuzzHoldsTerm(f *testing.F) {
	for _, s := range [][4]string{
		{"github", "create_issue", "Opens an Issue.", "issue"},
		{"a", "b", "X/Y z", "b x/y"},
		{"lab", "temp", "\u212aelvin", "kelvin"},
		{"s", "t", "STRASSE stra\u00dfe", "stra\u00dfe"},
		{"s", "t", "\u0130stanbul", "i\u0307stanbul"},
		{"compta", "lister", "factures impayées, échéance", "impayees"},
		{"s", "t", "cafe\u0301 Straße", "cafe strasse"},
		{"fs", "rm", "De\u00adlete a \ufb01le", "delete a file"},
	} {
		f.Add(s[0], s[1], s[2], s[3])
	}
	f.Fuzz(func(t *testing.T, server, name, desc, term string) {
		term = lowerFold(term)
		tool := &catalog.Tool{Server: server, Name: name, Description: desc}
		var m termMatcher
		want := holdsTermByLowering(tool, term)
		if !want && analysis.IsASCII(term) {
			lower := lowerFold(tool.ID() + " " + tool.Description)
			want = strings.Contains(string(analysis.AppendUnaccented(nil, lower)), term)
		}
		if got := m.holds(tool, term); got != want {
			t.Fatalf("holds(%q/%q %q, %q) = %v, lower-casing (and unaccenting, for an ASCII term) says %v", server, name, desc, term, got, want)
		}
	})
}

// TestRequiredTermsBound: a query may require at most MaxRequiredTerms
// distinct terms; one given again counts once.
func TestRequiredTermsBound(t *testing.T) {
	svc := newService(t, nil)
	mustBuild(t, svc)
	terms := func(n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "+t%c%c ", 'a'+i/26, 'a'+i%26)
		}
		return b.String() + "issue"
	}
	tests := []struct {
		name  string
		query string
		code  string // "" when answered
	}{
		{"at the bound", terms(MaxRequiredTerms), ""},
		{"one term 500 times", strings.Repeat("+issue ", 500), ""},
		{"past the bound", terms(MaxRequiredTerms + 1), "too_many_required_terms"},
	}
	for _, tt := range tests {
		_, err := svc.Search(t.Context(), Request{Query: tt.query}, access.Caller{})
		var re *RequestError
		switch {
		case tt.code == "" && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.code != "" && (!errors.As(err, &re) || re.Code != tt.code):
			t.Errorf("%s: %v, want %s", tt.name, err, tt.code)
		}
	}
}

// TestOperatorsInLongQueries: a query over MaxQueryBytes is ranked on a
// digest of its words, but its operators are read from all of it first.
func TestOperatorsInLongQueries(t *testing.T) {
	svc := newService(t, nil)
	mustBuild(t, svc)
	var names []string
	for i := 0; len(strings.Join(names, ",")) <= MaxQueryBytes; i++ {
		names = append(names, fmt.Sprintf("github/nope_%03d", i))
	}
	prose := strings.Repeat("the weekly report mentions many things in passing ", MaxQueryBytes/50+1)
	tests := []struct {
		name     string
		req      Request
		mode     Mode
		tools    []string // the answer's retrieved or selected tools; nil: not checked
		required []string
		unknown  int
	}{
		{"select list", Request{Query: "select:slack/post_message," + strings.Join(names, ",")}, ModeSelect, []string{"slack/post_message"}, nil, len(names)},
		{"required term before the digest's tail", Request{Query: "+jira " + prose + " add a comment", IncludeCore: ptr(false)}, ModeHybrid, nil, []string{"jira"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if len(tt.req.Query) <= MaxQueryBytes {
				t.Fatalf("query of %d bytes is not long", len(tt.req.Query))
			}
			res := mustSearch(t, svc, tt.req)
			if res.Mode != tt.mode {
				t.Fatalf("mode %s, want %s", res.Mode, tt.mode)
			}
			var got []string
			for _, h := range res.Tools {
				got = append(got, h.Server+"/"+h.Name)
				if len(tt.required) > 0 && !strings.Contains(strings.ToLower(h.Server+"/"+h.Name+" "+h.Description), tt.required[0]) {
					t.Errorf("%s/%s lacks the required %q", h.Server, h.Name, tt.required[0])
				}
			}
			if tt.tools != nil && !slices.Equal(got, tt.tools) {
				t.Errorf("tools %v, want %v", got, tt.tools)
			}
			if len(tt.required) > 0 && len(got) == 0 {
				t.Error("no tool returned")
			}
			if !slices.Equal(res.Required, tt.required) {
				t.Errorf("required %v, want %v", res.Required, tt.required)
			}
			if n := 0; res.Diagnostic != nil {
				n = len(res.Diagnostic.Unknown) + res.Diagnostic.UnknownMore
				if n != tt.unknown {
					t.Errorf("%d unknown names, want %d", n, tt.unknown)
				}
			} else if tt.unknown != 0 {
				t.Errorf("no diagnostic, want %d unknown names", tt.unknown)
			}
		})
	}
}

// TestUnknownNamesCounted: however many names a request has that match
// nothing, the answer lists the first MaxUnknownListed, in the order
// asked, and counts the rest.
func TestUnknownNamesCounted(t *testing.T) {
	svc := newService(t, nil)
	mustBuild(t, svc)
	names := func(n int, prefix string) []string {
		var out []string
		for i := range n {
			out = append(out, fmt.Sprintf("%snope_%04d", prefix, i))
		}
		return out
	}
	many := names(5000, "")
	tests := []struct {
		name  string
		req   Request
		first string
		total int
	}{
		{"visible tools", Request{Query: "list issues", Visibility: access.Visibility{Tools: append([]string{"github/list_issues"}, many...)}}, "nope_0000", 5000},
		{"visible servers", Request{Query: "list issues", Visibility: access.Visibility{Servers: append([]string{"github"}, many...)}}, "nope_0000", 5000},
		{"servers", Request{Query: "list issues", Servers: append([]string{"github"}, many...)}, "server nope_0000", 5000},
		{"select", Request{Query: "select:github/list_issues," + strings.Join(names(100, "github/"), ",")}, "github/nope_0000", 100},
		{"as many as are listed", Request{Query: "list issues", Servers: many[:MaxUnknownListed]}, "server nope_0000", MaxUnknownListed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := mustSearch(t, svc, tt.req)
			if res.Diagnostic == nil {
				t.Fatal("no diagnostic")
			}
			d := res.Diagnostic
			if len(d.Unknown) != min(tt.total, MaxUnknownListed) || len(d.Unknown)+d.UnknownMore != tt.total {
				t.Errorf("%d unknown names listed and %d more, want %d in all, at most %d listed", len(d.Unknown), d.UnknownMore, tt.total, MaxUnknownListed)
			}
			if !strings.HasSuffix(d.Unknown[0], tt.first) {
				t.Errorf("first unknown %q, want %q", d.Unknown[0], tt.first)
			}
		})
	}
}

// TestEchoedNamesBounded: an answer quotes back the names it could not
// find, and the terms it required, but never more of one than the
// longest name a catalog allows could need; a shorter one whole.
func TestEchoedNamesBounded(t *testing.T) {
	svc := newService(t, nil)
	mustBuild(t, svc)
	long := strings.Repeat("x", 10_000)
	tests := []struct {
		name  string
		req   Request
		whole string // a name that must be quoted whole
	}{
		{"server", Request{Query: "list issues", Servers: []string{long, "githb"}}, "server githb"},
		{"server_match", Request{Query: "list issues", ServerMatch: long}, ""},
		{"select", Request{Query: "select:" + long + ",github/nope"}, "github/nope"},
		{"visible tools", Request{Query: "list issues", Visibility: access.Visibility{Tools: []string{long}}}, ""},
		{"required term", Request{Query: "+" + long + " list issues"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := mustSearch(t, svc, tt.req)
			var quoted []string
			if res.Diagnostic != nil {
				quoted = append(quoted, res.Diagnostic.Unknown...)
				for k, v := range res.Diagnostic.DidYouMean {
					quoted = append(quoted, k, v)
				}
			}
			quoted = append(quoted, res.Required...)
			if len(quoted) == 0 {
				t.Fatal("nothing quoted back")
			}
			for _, q := range quoted {
				if len(q) > maxEchoed+len("…") {
					t.Errorf("quoted %d bytes: %.40q…", len(q), q)
				}
			}
			if tt.whole != "" && !slices.Contains(quoted, tt.whole) {
				t.Errorf("%q not quoted whole in %.200q", tt.whole, quoted)
			}
		})
	}
}
