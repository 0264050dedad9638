package analysis

import (
	"slices"
	"testing"
)

func TestExpand(t *testing.T) {
	vocab := func(words ...string) func(string) bool {
		return func(term string) bool { return slices.Contains(words, term) }
	}
	tests := []struct {
		name  string
		query string
		known func(string) bool
		want  []string
	}{
		{"an unknown word meets the catalog's form", "multiplication of 3 and 2", vocab("multiply", "3", "2"),
			[]string{"multiplication", "3", "2", "multiply"}},
		{"a pertainym", "historical events", vocab("history", "event"), []string{"historical", "event", "history"}},
		{"a known word is never expanded", "delete the file", vocab("delete", "deletion", "file"), []string{"delete", "file"}},
		{"relatives the catalog lacks are not added", "multiplication", vocab("sum"), []string{"multiplication"}},
		{"a word WordNet does not know", "zxqv", vocab("multiply"), []string{"zxqv"}},
	}
	for _, tt := range tests {
		terms := English.Terms(tt.query)
		before := slices.Clone(terms)
		got := English.Expand(terms, tt.known)
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: Expand(%q) = %q, want %q", tt.name, tt.query, got, tt.want)
		}
		if !slices.Equal(terms, before) {
			t.Errorf("%s: Expand changed its argument to %q", tt.name, terms)
		}
	}
}

// The table is parsed from the embedded file: every line is "word<TAB>words"
// or a comment, and the relation is symmetric once analysed.
func TestDerivedTable(t *testing.T) {
	m := English.derived()
	if len(m) < 20000 {
		t.Fatalf("derived table has %d words, want the whole WordNet table", len(m))
	}
	for w, rels := range m {
		for _, r := range rels {
			if !slices.Contains(m[r], w) && !stop[r] {
				t.Errorf("%q relates to %q but not back", w, r)
				return
			}
		}
	}
}
