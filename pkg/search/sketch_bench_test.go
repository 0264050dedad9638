package search

import (
	"bufio"
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/toolsearch/toolsearch/pkg/access"
	"github.com/toolsearch/toolsearch/pkg/embedding"
	"github.com/toolsearch/toolsearch/pkg/index"
)

// projected is a provider of dense vectors with a text's meaning in them,
// offline: the local embedder's sparse vector (fitted to the catalog),
// through a fixed random projection to 768 dimensions, which keeps
// products (Johnson–Lindenstrauss), plus a direction every text shares as
// much as its own, as a model's embeddings do (unrelated texts at a
// cosine of about 0.5).
type projected struct {
	local      embedding.Embedder
	proj, bias []float32
}

const projectedDim = 768

func newProjected(texts []string) *projected {
	r := rand.New(rand.NewPCG(9, 9))
	p := &projected{local: embedding.NewLocal(1024).Fit(texts), proj: make([]float32, 1024*projectedDim), bias: make([]float32, projectedDim)}
	for i := range p.proj {
		p.proj[i] = float32(r.NormFloat64())
	}
	for j := range p.bias {
		p.bias[j] = float32(r.NormFloat64())
	}
	index.Normalize(p.bias)
	return p
}

func (p *projected) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	vs, err := p.local.Embed(ctx, texts)
	if err != nil {
		return nil, err
	}
	out := make([][]float32, len(vs))
	for i, v := range vs {
		index.Normalize(v)
		o := make([]float32, projectedDim)
		for k, x := range v {
			if x != 0 {
				for j, y := range p.proj[k*projectedDim : (k+1)*projectedDim] {
					o[j] += x * y
				}
			}
		}
		index.Normalize(o)
		for j := range o {
			o[j] += p.bias[j]
		}
		out[i] = o
	}
	return out, nil
}

func (p *projected) Info() embedding.Info {
	return embedding.Info{Provider: "projected", Model: "local", Dimensions: projectedDim}
}

// BenchmarkSketchRecall is what serving a rebuild from the index's sign
// codes (makeRoom) costs in recall@10 on the shared sets, against the
// exact index and against keywords alone (what a rebuild that lets the
// index go wholly serves), through a provider of dense vectors (projected:
// there is no model offline). Run once: -bench SketchRecall -benchtime 1x.
func BenchmarkSketchRecall(b *testing.B) {
	for _, set := range []string{"metatool", "stabletoolbench", "bfcl-live", "seal-tools", "api-bank"} {
		b.Run(set, func(b *testing.B) {
			setup := sharedSetup(b, set)
			cat := setup.Catalog
			var texts []string
			for _, t := range cat.Tools() {
				texts = append(texts, t.Name+" "+t.Server+" "+t.Description)
			}
			queries, expected := labelledCases(b, filepath.Join(evalData(), set, "cases.jsonl"))
			svc := New(Config{Embedder: newProjected(texts), Version: "bench", QueryCacheSize: -1})
			if _, err := svc.Build(b.Context(), setup); err != nil {
				b.Fatal(err)
			}
			recall := func(mode Mode) float64 {
				var sum float64
				for i, q := range queries {
					res, err := svc.Search(b.Context(), Request{Query: q, Mode: mode}, access.Caller{})
					if err != nil {
						b.Fatal(err)
					}
					found := 0
					for _, ref := range expected[i] {
						j, err := cat.Resolve(ref)
						if err != nil {
							b.Fatal(err)
						}
						t := cat.Tool(j)
						for _, h := range res.Tools {
							if h.Score != nil && h.Server == t.Server && h.Name == t.Name {
								found++
								break
							}
						}
					}
					sum += float64(found) / float64(len(expected[i]))
				}
				return sum / float64(len(queries))
			}
			for b.Loop() {
				hybrid, semantic, keyword := recall(ModeHybrid), recall(ModeSemantic), recall(ModeKeyword)
				svc.dropDense(svc.Current(), "benchmark", true)
				b.ReportMetric(hybrid, "hybrid")
				b.ReportMetric(recall(ModeHybrid), "sketch-hybrid")
				b.ReportMetric(semantic, "semantic")
				b.ReportMetric(recall(ModeSemantic), "sketch-semantic")
				b.ReportMetric(keyword, "keyword")
			}
		})
	}
}

// labelledCases are a shared set's queries and the tools each expects.
func labelledCases(tb testing.TB, path string) (queries []string, expected [][]string) {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var c struct {
			Query    string   `json:"query"`
			Expected []string `json:"expected"`
		}
		if json.Unmarshal(sc.Bytes(), &c) == nil && c.Query != "" && len(c.Expected) > 0 {
			queries, expected = append(queries, c.Query), append(expected, c.Expected)
		}
	}
	return queries, expected
}
