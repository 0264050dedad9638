package analysis

import (
	"fmt"
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
