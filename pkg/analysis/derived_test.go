package analysis

import (
	"slices"
	"testing"

	"github.com/toolsearch/toolsearch/pkg/internal/memo"
)

// vocab is a catalog's vocabulary: words, analysed as a catalog's are.
func vocab(words ...string) func(string) bool {
	return exactly(stems(words...)...)
}

// exactly is a vocabulary of terms taken as they are.
func exactly(terms ...string) func(string) bool {
	return func(term string) bool { return slices.Contains(terms, term) }
}

// stems is words as terms.
func stems(words ...string) []string {
	var out []string
	for _, w := range words {
		out = append(out, Stem(w))
	}
	return out
}

func TestExpand(t *testing.T) {
	tests := []struct {
		name  string
		query string
		known func(string) bool
		want  []string
	}{
		{"an unknown word meets the catalog's form", "multiplication of 3 and 2", vocab("multiply", "3", "2"), stems("multiplication", "3", "2", "multiply")},
		{"a pertainym", "historical events", vocab("history", "event"), stems("historical", "event", "history")},
		{"a known word is never expanded", "delete the file", vocab("delete", "deletion", "file"), stems("delete", "file")},
		{"relatives the catalog lacks are not added", "multiplication", vocab("sum"), stems("multiplication")},
		{"a word WordNet does not know", "zxqv", vocab("multiply"), stems("zxqv")},
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
	if m.keys < 20000 {
		t.Fatalf("derived table has %d words, want the whole WordNet table", m.keys)
	}
	for w, rels := range m.all() {
		for _, r := range rels {
			if !slices.Contains(m.get(r), w) && !stop[r] {
				t.Errorf("%q relates to %q but not back", w, r)
				return
			}
		}
	}
}

func TestBroader(t *testing.T) {
	tests := []struct {
		name  string
		query string
		known func(string) bool
		want  []string
	}{
		{"a specific word meets the catalog's general one", "I have a rash", vocab("symptom", "have"), stems("symptom")},
		{"the nearest known level wins", "I have a rash", vocab("symptom", "eruption"), stems("eruption")},
		{"each unknown word walks up", "rent a sedan with a fever", vocab("rent", "car", "symptom"), stems("car", "symptom")},
		{"a known word is never broadened", "rash relief", vocab("rash", "symptom", "relief"), nil},
		{"nothing known up the hierarchy", "rash", vocab("weather"), nil},
		{"a word WordNet does not know", "zxqv", vocab("symptom"), nil},
	}
	for _, tt := range tests {
		if got := English.Broader(English.Terms(tt.query), tt.known); !slices.Equal(got, tt.want) {
			t.Errorf("%s: Broader(%q) = %q, want %q", tt.name, tt.query, got, tt.want)
		}
	}
}

// A word with a derivationally related form the catalog knows is not
// also broadened: the related form is the closer evidence.
func TestBroaderAfterDerived(t *testing.T) {
	a := &Analyzer{stop: stop, stem: Stem, words: memo.New[word](),
		derived: func() *relations { return packRelations(map[string][]string{"deletion": {"delete"}}) },
		hypernyms: func() hierarchy {
			return packHierarchy([][]int32{nil}, [][]string{{"edit"}}, map[string][]int32{"deletion": {0}})
		},
	}
	if got := a.Broader([]string{"deletion"}, exactly("delete", "edit")); got != nil {
		t.Errorf("with the derived form known: Broader = %q, want none", got)
	}
	if got := a.Broader([]string{"deletion"}, exactly("edit")); !slices.Equal(got, []string{"edit"}) {
		t.Errorf("without it: Broader = %q, want [edit]", got)
	}
}

// Every synset number in the parsed hierarchy names a synset, and it is
// the whole WordNet table.
func TestHypernymTable(t *testing.T) {
	h := English.hypernyms()
	if h.keyed < 40000 || h.up.len() < 10000 {
		t.Fatalf("hypernym table has %d words and %d synsets, want the whole WordNet table", h.keyed, h.up.len())
	}
	in := func(ns []int32) bool {
		return !slices.ContainsFunc(ns, func(n int32) bool { return n < 0 || int(n) >= h.up.len() })
	}
	for i := range int32(h.up.len()) {
		if ups := h.up.at(i); !in(ups) {
			t.Fatalf("synset %d has hypernyms %v out of range", i, ups)
		}
	}
	for i := range h.keyed {
		w := h.stems.String(i)
		if ns, ok := h.senses(w); !ok || !in(ns) {
			t.Fatalf("%q has hypernyms %v out of range", w, ns)
		}
	}
}

// BenchmarkLoadTables is what a process pays once, in the background of
// its first build, to load the packed tables; parse is what it paid when
// it parsed the TSV files instead.
func BenchmarkLoadTables(b *testing.B) {
	b.Run("packed", func(b *testing.B) {
		for b.Loop() {
			if _, err := decodeTables(lexiconBin); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parse", func(b *testing.B) {
		for b.Loop() {
			generateTables()
		}
	})
}
