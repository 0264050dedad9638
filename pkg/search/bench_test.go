package search

import (
	"bufio"
	"encoding/json"
	"os"
	"testing"

	"github.com/toolsearch/toolsearch/pkg/access"

	"github.com/toolsearch/toolsearch/pkg/embedding"
)

// BenchmarkQuery is one whole search (operators, query embedding, ranking,
// confidence, core tools, rendering) over the default catalog with the
// local embedder at its default width, as `make run` serves it, cycling
// through the project's own eval queries. It is the in-process part of
// what `make load` drives over HTTP.
func BenchmarkQuery(b *testing.B) {
	queries := evalQueries(b)
	svc := New(Config{Embedder: embedding.NewLocal(0), Version: "bench"})
	if _, err := svc.Build(b.Context(), defaultSetup(b)); err != nil {
		b.Fatal(err)
	}
	for _, mode := range []Mode{ModeHybrid, ModeSemantic, ModeKeyword} {
		b.Run(string(mode), func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := svc.Search(b.Context(), Request{Query: queries[i%len(queries)], Mode: mode}, access.Caller{}); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

func evalQueries(tb testing.TB) []string {
	tb.Helper()
	f, err := os.Open("../../evals/cases.jsonl")
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var c struct {
			Query string `json:"query"`
		}
		if json.Unmarshal(sc.Bytes(), &c) == nil && c.Query != "" {
			out = append(out, c.Query)
		}
	}
	if len(out) == 0 {
		tb.Fatal("no queries in evals/cases.jsonl")
	}
	return out
}
