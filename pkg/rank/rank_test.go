package rank

import (
	"slices"
	"strings"
	"testing"
)

func TestSentences(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"find a hotel in Rome. Also book a table for two", []string{"find a hotel in Rome", "Also book a table for two"}},
		{"one two", nil}, // under three words: no sentence
		{"e.g. use example.com to test 3.5 things", []string{"use example.com to test 3.5 things"}}, // "e.g" alone is under three words
		{"list my open issues? then close the stale ones!", []string{"list my open issues", "then close the stale ones"}},
		{"a b c; d e", []string{"a b c"}},
	}
	for _, tt := range tests {
		if got := sentences(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("sentences(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// hasWords is the allocation-free form of len(strings.Fields(s)) >= n,
// which is its reference.
func FuzzHasWords(f *testing.F) {
	for _, s := range []string{"", " ", "a", "a b", " two  spaces\tand tab ", "caf\u00e9\u00a0menu", "x\u2003y z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for n := range 5 {
			if got, want := hasWords(s, n), len(strings.Fields(s)) >= n; got != want {
				t.Fatalf("hasWords(%q, %d) = %v, want %v", s, n, got, want)
			}
		}
	})
}
