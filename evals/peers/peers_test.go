// Package peers measures toolsearch beside other search engines on the
// same texts and queries, in the same run: bleve's BM25 (scorch, its
// English analyzer) over each tool's text, against toolsearch's whole
// hybrid search. A module of its own, so that bleve stays out of the
// service's dependencies.
//
//	cd evals/peers && go test -run '^$' -bench . -count 5
package peers

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/mapping"
	index "github.com/blevesearch/bleve_index_api"

	"github.com/toolsearch/toolsearch/pkg/access"
	"github.com/toolsearch/toolsearch/pkg/catalog"
	"github.com/toolsearch/toolsearch/pkg/embedding"
	"github.com/toolsearch/toolsearch/pkg/search"
)

// evalData is where the shared evaluation sets are (TOOLSEARCH_EVALDATA,
// default ../../../shared/evaldata); the benchmarks skip without them.
func evalData() string {
	if d := os.Getenv("TOOLSEARCH_EVALDATA"); d != "" {
		return d
	}
	return filepath.Join("..", "..", "..", "shared", "evaldata")
}

type testCase struct {
	Query    string   `json:"query"`
	Expected []string `json:"expected"`
}

func load(tb testing.TB, set string) (*catalog.Catalog, []testCase) {
	tb.Helper()
	dir := filepath.Join(evalData(), set)
	if _, err := os.Stat(filepath.Join(dir, "cases.jsonl")); err != nil {
		tb.Skipf("%s: no shared evaluation data (%v)", set, err)
	}
	parts, err := catalog.ReadParts([]string{filepath.Join(dir, "catalog.json")}, "")
	if err != nil {
		tb.Fatal(err)
	}
	cat, err := catalog.New(parts)
	if err != nil {
		tb.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, "cases.jsonl"))
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var cases []testCase
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var c testCase
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			tb.Fatal(err)
		}
		cases = append(cases, c)
	}
	return cat, cases
}

// bleveIndex indexes every tool's text with bleve's BM25 and English
// analyzer; the document id is the tool's row.
func bleveIndex(tb testing.TB, cat *catalog.Catalog) bleve.Index {
	tb.Helper()
	m := bleve.NewIndexMapping()
	m.ScoringModel = index.BM25Scoring
	m.DefaultAnalyzer = en.AnalyzerName
	doc := mapping.NewDocumentMapping()
	text := bleve.NewTextFieldMapping()
	text.Analyzer = en.AnalyzerName
	text.Store = false
	doc.AddFieldMappingsAt("text", text)
	m.DefaultMapping = doc
	ix, err := bleve.New(filepath.Join(tb.TempDir(), "bleve"), m)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ix.Close() })
	b := ix.NewBatch()
	for i, t := range cat.Tools() {
		if err := b.Index(itoa(i), map[string]string{"text": t.Text()}); err != nil {
			tb.Fatal(err)
		}
	}
	if err := ix.Batch(b); err != nil {
		tb.Fatal(err)
	}
	return ix
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

// BenchmarkSealTools is one query of seal-tools (4,076 tools, 2,054
// queries, cycled) by bleve's BM25 (top 10, ids only) and by toolsearch's
// default hybrid search (top 10, its whole answer), in the same run.
func BenchmarkSealTools(b *testing.B) {
	cat, cases := load(b, "seal-tools")
	b.Run("bleve-bm25", func(b *testing.B) {
		ix := bleveIndex(b, cat)
		i := 0
		for b.Loop() {
			req := bleve.NewSearchRequestOptions(bleve.NewMatchQuery(cases[i%len(cases)].Query), 10, 0, false)
			if _, err := ix.Search(req); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("toolsearch-hybrid", func(b *testing.B) {
		svc := search.New(search.Config{Embedder: embedding.NewLocal(0), Version: "peers"})
		if _, err := svc.Build(b.Context(), &search.Setup{Catalog: cat}); err != nil {
			b.Fatal(err)
		}
		i := 0
		for b.Loop() {
			if _, err := svc.Search(b.Context(), search.Request{Query: cases[i%len(cases)].Query}, access.Caller{}); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
}
