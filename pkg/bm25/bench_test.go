package bm25

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/toolsearch/toolsearch/pkg/analysis"
	"github.com/toolsearch/toolsearch/pkg/catalog"
	"github.com/toolsearch/toolsearch/pkg/catgen"
	"github.com/toolsearch/toolsearch/pkg/catgen/gentest"
)

// BenchmarkScores scores queries against a synthetic 10,000-tool corpus
// (a 2,000-word vocabulary with a skewed frequency, so common words have
// long posting lists): the loop over postings that a keyword or hybrid
// query spends its time in at scale.
func BenchmarkScores(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	// Invented words of three syllables: none is a stop word, and the
	// stemmer leaves them whole.
	syll := []string{"ka", "to", "mi", "ru", "sel", "van", "po", "din", "lu", "ber", "ko", "mas", "ti", "zor"}
	vocab := make([]string, 2000)
	for i := range vocab {
		vocab[i] = syll[i%14] + syll[(i/14)%14] + syll[(i/196)%14] + "q"
	}
	word := func() string { return vocab[min(int(r.ExpFloat64()*300), len(vocab)-1)] }
	text := func(n int) string {
		ws := make([]string, n)
		for i := range ws {
			ws[i] = word()
		}
		return strings.Join(ws, " ")
	}
	docs := make([]Doc, 10_000)
	for i := range docs {
		docs[i] = Doc{Name: text(3), Server: fmt.Sprintf("server%d", i%500), Description: text(25), Params: text(10)}
	}
	ix := fromDocs(docs, DefaultConfig)
	queries := make([]Query, 64)
	for i := range queries {
		queries[i] = ix.Prepare(text(6), nil)
	}
	dst := make([]float32, ix.Len())
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		queries[i%len(queries)].ScoresInto(dst)
		i++
	}
}

// BenchmarkNew builds the index of 10,000 generated tools (package
// catgen) from their analysis, as a build does after analysing them.
func BenchmarkNew(b *testing.B) {
	cat := gentest.Catalog(b, catgen.Spec{Tools: 10_000, Seed: 1})
	tools := cat.Tools()
	corpus := analysis.English.Corpus(len(tools), ToolSegments, func(i int, seg []string) {
		p := tools[i].Fields().Parts()
		copy(seg, p[:])
	})
	var ix *Index
	for b.Loop() {
		ix = New(corpus, ToolLayout, DefaultConfig)
	}
	b.ReportMetric(float64(len(ix.post)), "postings")
}

// BenchmarkCorrect is what reading a query's misspelling costs the first
// time the index sees it (nearest's lookups; Correct then keeps the
// answer), for terms of 5, 12 and 24 letters (maxTypoLen): one that is
// one edit from a word of the default catalog and two that are one edit
// from none. A query pays this for at most MaxCorrections terms.
func BenchmarkCorrect(b *testing.B) {
	cat, err := catalog.Default()
	if err != nil {
		b.Fatal(err)
	}
	ix := catalogIndex(b, cat)
	for _, term := range []string{"mesag", "qzxvplmkqzxv", strings.Repeat("qzxvplmk", 3)} {
		b.Run(fmt.Sprintf("len=%d", len(term)), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				ix.nearest(term)
			}
		})
	}
}
