package embedding_test

import (
	"testing"

	"github.com/toolsearch/toolsearch/pkg/analysis"
	"github.com/toolsearch/toolsearch/pkg/catgen"
	"github.com/toolsearch/toolsearch/pkg/catgen/gentest"
	"github.com/toolsearch/toolsearch/pkg/embedding"
)

// BenchmarkFitEmbedCorpus is the local embedder's share of a build, on the
// texts of 10,000 generated tools analysed once before the timer: the
// vocabulary's features, fitting and embedding, apart from BM25 and the
// catalog's reading, which BenchmarkStartup in pkg/search times with it.
func BenchmarkFitEmbedCorpus(b *testing.B) {
	cat := gentest.Catalog(b, catgen.Spec{Tools: 10000, Seed: 1})
	tools := cat.Tools()
	c := analysis.English.Corpus(len(tools), analysis.Segments{N: 1}, func(i int, seg []string) { seg[0] = tools[i].Text() })
	l := embedding.NewLocal(0)
	for b.Loop() {
		if _, err := l.FitEmbedCorpus(b.Context(), c, func(int, []float32, []uint64) {}); err != nil {
			b.Fatal(err)
		}
	}
}
