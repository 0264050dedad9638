package embedding

import (
	"maps"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/toolsearch/toolsearch/pkg/analysis"
)

// features is termFeatures of a text.
func features(text string, sc *scratch) []feature {
	return termFeatures(analysis.English.Terms(text), sc)
}

// plainFeatures is termFeatures' counting written the plain way, with a map
// and a slice for first-occurrence order: the reference the open-addressing
// table must match exactly.
func plainFeatures(text string) []feature {
	var order []uint64
	count := map[uint64]int{}
	last := map[uint64]float32{}
	raw := rawFeatures(text)
	for _, f := range raw {
		if count[f.hash] == 0 {
			order = append(order, f.hash)
		}
		count[f.hash]++
		last[f.hash] = f.weight
	}
	out := make([]feature, 0, len(order))
	for _, h := range order {
		w := last[h]
		if c := count[h]; c > 1 {
			w *= float32(1 + math.Log(float64(c)))
		}
		out = append(out, feature{hash: h, weight: w})
	}
	return out
}

// rawFeatures is every occurrence termFeatures hashes, in text order.
func rawFeatures(text string) []feature {
	sc := new(scratch)
	features(text, sc)
	return slices.Clone(sc.raw)
}

func TestFeaturesMatchPlainCounting(t *testing.T) {
	for _, text := range []string{
		"", "x", "send a chat message", "file files filing filed " + strings.Repeat("issue ", 50),
		"createPullRequest create_pull_request HTTPServer über café", strings.Repeat("a b c d e f g h ", 40),
	} {
		got := slices.Clone(features(text, new(scratch)))
		if want := plainFeatures(text); !slices.Equal(got, want) {
			t.Errorf("features(%q): %d features, plain counting %d (or weights/order differ)", text, len(got), len(want))
		}
	}
}

// TestDocVectorsAreTermFeatures: a corpus's documents are embedded from
// their terms' features, worked out once per vocabulary term and counted
// by id: the vector, bit for bit, and the buckets marked, that hashing
// the document's terms one by one and accumulating them give, a query's
// way; whether pairs are looked up among the ids or not, at a width that
// is a power of two (a mask picks the bucket) and one that is not.
func TestDocVectorsAreTermFeatures(t *testing.T) {
	texts := []string{
		"", "x", "send a chat message to the channel", "file files filing filed " + strings.Repeat("issue ", 50),
		"createPullRequest create_pull_request HTTPServer über café", strings.Repeat("a b c d e f g h ", 40),
		"search apartments for rent near the office", "qqconceptcreate", strings.Repeat("issue ", 100),
	}
	c := corpusOf(texts)
	for _, dim := range []int{1024, 300} {
		for _, fitted := range []bool{false, true} {
			l := NewLocal(dim)
			if fitted {
				l = l.FitCorpus(c).(*Local)
			}
			vf := newVocabFeatures(c.Vocab())
			for _, pairIDs := range []bool{true, false} {
				dv, work := newDocVectors(l, vf, pairIDs), (*docWork)(nil)
				work = dv.newWork()
				for i, text := range texts {
					words := RowWords(dim)
					got, gotTouched := make([]float32, dim), make([]uint64, words)
					dv.embed(c.Doc(i), work, got, gotTouched)
					want, wantTouched := make([]float32, dim), make([]uint64, words)
					l.accumulate(features(text, new(scratch)), want, wantTouched, nil)
					for b := range want {
						if math.Float32bits(got[b]) != math.Float32bits(want[b]) {
							t.Fatalf("dim %d, fitted %v, pair ids %v, %q: bucket %d is %v, by the terms %v", dim, fitted, pairIDs, text, b, got[b], want[b])
						}
					}
					if !slices.Equal(gotTouched, wantTouched) {
						t.Errorf("dim %d, fitted %v, pair ids %v, %q: other buckets marked", dim, fitted, pairIDs, text)
					}
				}
			}
		}
	}
}

// TestFitEmbedCorpus: fitting and embedding in one pass gives the vectors
// and the query embeddings that fitting, then embedding, give.
func TestFitEmbedCorpus(t *testing.T) {
	texts := []string{"read a file from disk", "send an email to a team", "list the open invoices", "rename a shared folder"}
	c := corpusOf(texts)
	l := NewLocal(0)
	embed := func(set func(Rows) (Embedder, error)) ([]float32, []float32) {
		block := make([]float32, len(texts)*l.dim)
		e, err := set(func(first int, rows []float32, _ []uint64) { copy(block[first*l.dim:], rows) })
		if err != nil {
			t.Fatal(err)
		}
		q, err := e.Embed(t.Context(), []string{"open a file"})
		if err != nil {
			t.Fatal(err)
		}
		return block, q[0]
	}
	wantRows, wantQuery := embed(func(set Rows) (Embedder, error) {
		f := l.FitCorpus(c).(*Local)
		return f, f.EmbedCorpus(t.Context(), c, set)
	})
	gotRows, gotQuery := embed(func(set Rows) (Embedder, error) { return l.FitEmbedCorpus(t.Context(), c, set) })
	if !slices.Equal(gotRows, wantRows) || !slices.Equal(gotQuery, wantQuery) {
		t.Error("FitEmbedCorpus differs from FitCorpus then EmbedCorpus")
	}
}

// TestCountDocIsDocFeatures: the features fitting counts for a document
// are the distinct features termFeatures gives its text.
func TestCountDocIsDocFeatures(t *testing.T) {
	texts := []string{"read a file from disk, then read the file again", "send an email to a team: send it now",
		"list the open invoices of the open accounts", "rename a shared folder", "read read read", ""}
	c := corpusOf(texts)
	vf := newVocabFeatures(c.Vocab())
	sc := new(scratch)
	seen := make([]int32, len(vf.hashes))
	for i := range c.Len() {
		want := map[uint64]bool{}
		for _, f := range features(texts[i], sc) {
			want[f.hash] = true
		}
		df := make([]float32, len(vf.hashes))
		got := map[uint64]bool{}
		pairs, _ := vf.countDoc(c.Doc(i), int32(i+1), seen, df, nil)
		for _, h := range pairs {
			if got[h] {
				t.Errorf("doc %d: pair %x counted twice", i, h)
			}
			got[h] = true
		}
		for fid, n := range df {
			if n > 1 {
				t.Errorf("doc %d: feature %d counted %v times", i, fid, n)
			}
			if n == 1 {
				got[vf.hashes[fid]] = true
			}
		}
		if !maps.Equal(got, want) {
			t.Errorf("doc %d: counted %d features, termFeatures has %d", i, len(got), len(want))
		}
	}
}
