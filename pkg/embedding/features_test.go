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

// A corpus's documents get their features from each term's, worked out
// once per vocabulary term: the same features, in the same order, with the
// same weights as hashing the document's terms one by one.
func TestDocFeaturesAreTermFeatures(t *testing.T) {
	texts := []string{
		"", "x", "send a chat message to the channel", "file files filing filed " + strings.Repeat("issue ", 50),
		"createPullRequest create_pull_request HTTPServer über café", strings.Repeat("a b c d e f g h ", 40),
		"search apartments for rent near the office", "qqconceptcreate",
	}
	c := corpusOf(texts)
	vf := newVocabFeatures(c.Vocab())
	for i, text := range texts {
		got := slices.Clone(vf.docFeatures(c.Doc(i), new(scratch)))
		for j, f := range got {
			if f.fid != 0 && vf.hashes[f.fid] != f.hash {
				t.Fatalf("%q: feature %d has id %d, which is hash %x, not %x", text, j, f.fid, vf.hashes[f.fid], f.hash)
			}
			got[j].fid = 0
		}
		if want := features(text, new(scratch)); !slices.Equal(got, want) {
			t.Errorf("%q: %d features from the vocabulary's, %d from the terms (or weights/order differ)", text, len(got), len(want))
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
// are the distinct features docFeatures gives it.
func TestCountDocIsDocFeatures(t *testing.T) {
	texts := []string{"read a file from disk, then read the file again", "send an email to a team: send it now",
		"list the open invoices of the open accounts", "rename a shared folder", "read read read", ""}
	c := corpusOf(texts)
	vf := newVocabFeatures(c.Vocab())
	sc := new(scratch)
	seen := make([]int32, len(vf.hashes))
	for i := range c.Len() {
		want := map[uint64]bool{}
		for _, f := range vf.docFeatures(c.Doc(i), sc) {
			want[f.hash] = true
		}
		df := make([]float32, len(vf.hashes))
		got := map[uint64]bool{}
		for _, h := range vf.countDoc(c.Doc(i), int32(i+1), seen, df, nil) {
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
			t.Errorf("doc %d: counted %d features, docFeatures has %d", i, len(got), len(want))
		}
	}
}
