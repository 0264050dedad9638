package analysis

import (
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A corpus holds, for every segment, exactly the terms Terms gives it,
// however many cores shared the work and whatever words repeat across
// documents (each core stems a word once).
func TestCorpusIsTerms(t *testing.T) {
	segs := []string{"List the open Issues", "", "createPullRequest for repos", "Ünïcödé Wörds and the files", "filed filing files", "qqconceptcreate"}
	for _, n := range []int{0, 1, 3, 1000} { // 1000 is split across cores
		doc := func(i, s int) string { return fmt.Sprintf("%s %d", segs[(i+s)%len(segs)], i%7) }
		c := English.Corpus(n, Segments{N: 3}, func(i int, seg []string) {
			for s := range seg {
				seg[s] = doc(i, s)
			}
		})
		if c.Len() != n {
			t.Fatalf("n=%d: Len %d", n, c.Len())
		}
		term := func(ids []uint32) []string {
			out := []string{}
			for _, id := range ids {
				out = append(out, c.Vocab()[id])
			}
			return out
		}
		for i := range n {
			var whole []string
			for s := range 3 {
				want := append([]string{}, English.Terms(doc(i, s))...)
				whole = append(whole, want...)
				if diff := cmp.Diff(want, term(c.Segment(i, s))); diff != "" {
					t.Fatalf("n=%d doc %d segment %d (-Terms +corpus):\n%s", n, i, s, diff)
				}
			}
			if diff := cmp.Diff(whole, term(c.Doc(i))); diff != "" {
				t.Fatalf("n=%d doc %d whole (-Terms +corpus):\n%s", n, i, diff)
			}
		}
		seen := map[string]bool{}
		for _, v := range c.Vocab() {
			if seen[v] {
				t.Errorf("n=%d: %q twice in the vocabulary", n, v)
			}
			seen[v] = true
		}
		if n >= 3 {
			sub := c.Subset([]int{2, 0})
			if diff := cmp.Diff(term(c.Segment(2, 1)), term(sub.Segment(0, 1))); diff != "" {
				t.Errorf("Subset: row 0 is not document 2:\n%s", diff)
			}
		}
	}
}

// TestFilter: a filtered segment keeps its accepted terms in order, the
// other segments and documents are untouched, and a filter that accepts
// everything returns the corpus itself.
func TestFilter(t *testing.T) {
	c := English.Corpus(3, Segments{N: 3, Text: 2, Raw: []bool{false, false, true}}, func(i int, seg []string) {
		seg[0], seg[1] = "read the sheet", "cells"
		seg[2] = []string{"alpha beta gamma", "", "beta"}[i]
	})
	if c.Filter(2, func(uint32) bool { return true }) != c {
		t.Error("a filter that keeps everything copied the corpus")
	}
	vocab := c.Vocab()
	f := c.Filter(2, func(id uint32) bool { return vocab[id] != "beta" })
	words := func(c *Corpus, i, s int) (out []string) {
		for _, id := range c.Segment(i, s) {
			out = append(out, vocab[id])
		}
		return out
	}
	for i, want := range [][]string{{"alpha", "gamma"}, nil, nil} {
		if got := words(f, i, 2); !slices.Equal(got, want) {
			t.Errorf("doc %d: learned segment %v, want %v", i, got, want)
		}
		if !slices.Equal(f.Doc(i), c.Doc(i)) || !slices.Equal(words(f, i, 1), words(c, i, 1)) {
			t.Errorf("doc %d: text changed: %v, want %v", i, f.Doc(i), c.Doc(i))
		}
	}
	if got := words(c, 2, 2); !slices.Equal(got, []string{"beta"}) {
		t.Errorf("the original changed: %v", got)
	}
}
