// Command nomatch measures the no_match flag: how often it is raised when
// the tool a query needs is absent from the catalog (it should be) and when
// it is present (it should not be). For each sampled single-tool case of a
// set, the query runs twice: against the whole catalog, and against the
// catalog without its expected tool, built afresh so that nothing of the
// removed tool remains in BM25 statistics or the embedder's weights.
//
// Usage: go run ./evals/nomatch [-n 150] DIR...   (DIR holds catalog.json and cases.jsonl)
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"

	"github.com/toolsearch/toolsearch/pkg/access"
	"github.com/toolsearch/toolsearch/pkg/catalog"
	"github.com/toolsearch/toolsearch/pkg/embedding"
	"github.com/toolsearch/toolsearch/pkg/eval"
	"github.com/toolsearch/toolsearch/pkg/search"
)

func main() {
	n := flag.Int("n", 150, "single-tool cases sampled per set")
	flag.Parse()
	fmt.Println("| set | cases | flagged, tool present | flagged, tool absent | precision | recall |")
	fmt.Println("|---|---|---|---|---|---|")
	for _, dir := range flag.Args() {
		if err := run(dir, *n); err != nil {
			fmt.Fprintln(os.Stderr, "nomatch:", err)
			os.Exit(1)
		}
	}
}

func run(dir string, n int) error {
	parts, err := catalog.ReadParts([]string{filepath.Join(dir, "catalog.json")}, "")
	if err != nil {
		return err
	}
	cat, err := catalog.New(parts)
	if err != nil {
		return err
	}
	all, err := eval.LoadCases(filepath.Join(dir, "cases.jsonl"))
	if err != nil {
		return err
	}
	var cases []eval.Case
	for _, c := range all {
		if len(c.Expected) == 1 {
			cases = append(cases, c)
		}
	}
	r := rand.New(rand.NewPCG(1, 2)) // the same sample every run
	r.Shuffle(len(cases), func(i, j int) { cases[i], cases[j] = cases[j], cases[i] })
	cases = cases[:min(n, len(cases))]
	whole, err := service(cat)
	if err != nil {
		return err
	}
	present, absent, used := 0, 0, 0
	for _, c := range cases {
		row, err := cat.Resolve(c.Expected[0])
		if err != nil {
			continue
		}
		rows := make([]int, 0, cat.Len()-1)
		for i := range cat.Len() {
			if i != row {
				rows = append(rows, i)
			}
		}
		without, err := service(cat.Subset(rows))
		if err != nil {
			return err
		}
		used++
		if noMatch(whole, c.Query) {
			present++
		}
		if noMatch(without, c.Query) {
			absent++
		}
	}
	precision := float64(absent) / float64(max(1, absent+present))
	fmt.Printf("| %s | %d | %d | %d | %.2f | %.2f |\n", filepath.Base(dir), used, present, absent, precision, float64(absent)/float64(max(1, used)))
	return nil
}

func service(cat *catalog.Catalog) (*search.Service, error) {
	svc := search.New(search.Config{Embedder: embedding.NewLocal(0)})
	_, err := svc.Build(context.Background(), &search.Setup{Catalog: cat})
	return svc, err
}

func noMatch(svc *search.Service, q string) bool {
	res, err := svc.Search(context.Background(), search.Request{Query: q, IncludeCore: new(bool)}, access.Caller{})
	return err == nil && res.NoMatch
}
