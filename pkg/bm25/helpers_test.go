package bm25

import (
	"testing"

	"github.com/toolsearch/toolsearch/pkg/analysis"
	"github.com/toolsearch/toolsearch/pkg/catalog"
)

// Doc is one tool's text by field, for tests that write tools field by
// field.
type Doc [Concepts]string

// fromDocs indexes docs, analysed with their fields as the corpus's
// segments.
func fromDocs(docs []Doc, p Config) *Index {
	c := analysis.English.Corpus(len(docs), analysis.Segments{N: int(Concepts)}, func(i int, seg []string) { copy(seg, docs[i][:]) })
	return New(c, Layout{Text: [Concepts]int{0, 1, 2, 3, 4, 5}, Learned: -1}, p)
}

// catalogIndex indexes a catalog as a build does: its tools' text parts,
// analysed once.
func catalogIndex(tb testing.TB, cat *catalog.Catalog) *Index {
	tb.Helper()
	tools := cat.Tools()
	c := analysis.English.Corpus(len(tools), ToolSegments, func(i int, seg []string) {
		p := tools[i].Fields().Parts()
		copy(seg, p[:])
	})
	return New(c, ToolLayout, DefaultConfig)
}
