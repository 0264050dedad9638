package analysis

import (
	"slices"
	"testing"
)

func TestRelated(t *testing.T) {
	tests := []struct {
		word string
		want []string // concept ids, in group order
	}{
		{"apartment", []string{"c:apartment"}},
		{"rental", []string{"c:apartment"}},
		{"Flights", []string{"c:flight"}},        // analysed first: lower-cased and stemmed
		{"open", []string{"c:create", "c:read"}}, // in two groups
		{"share", []string{"c:share", "c:stock"}},
		{"zebra", nil},
		{"the", nil}, // a stop word is no term, so it relates to nothing
	}
	for _, tt := range tests {
		var got []string
		for _, term := range English.Terms(tt.word) {
			got = append(got, English.Related(term)...)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("Related(Terms(%q)) = %v, want %v", tt.word, got, tt.want)
		}
	}
}

// Every word of a group, analysed as a tool text or query would be, must
// meet its group: a stemmer change that orphaned a word would otherwise
// silently drop it.
func TestRelatedCoversEveryGroupWord(t *testing.T) {
	for _, g := range conceptGroups {
		id := "c:" + g[0]
		for _, w := range g {
			for _, term := range English.Terms(w) {
				if !slices.Contains(English.Related(term), id) {
					t.Errorf("word %q (term %q) does not relate to %s", w, term, id)
				}
			}
		}
	}
}
