package index

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// layouts are one matrix's values in every layout the service builds, for
// a dense and a sparse query.
type layout struct {
	name string
	mx   *Matrix
}

func layouts(tb testing.TB, rows, dim int, full int) []layout {
	tb.Helper()
	r := rand.New(rand.NewPCG(uint64(rows), uint64(dim)))
	vecs := make([][]float32, rows)
	cols := NewColumns(rows, dim)
	for i := range vecs {
		vecs[i] = make([]float32, dim)
		for j := range vecs[i] {
			if r.IntN(10) < full {
				vecs[i][j] = float32(r.NormFloat64())
			}
		}
		vecs[i][i%dim] += 1
		cols.SetRows(i, append([]float32(nil), vecs[i]...), touchedOf(vecs[i], dim, nil))
	}
	mx := draftOf(tb, vecs, 0)
	byCol, err := cols.Matrix()
	if err != nil {
		tb.Fatal(err)
	}
	return []layout{
		{"rows", mx},
		{"slabs", draftOf(tb, vecs, 64)},
		{"rows+columns", mx.WithColumns()},
		{"by-column", byCol},
		{"binary", mx.WithBinary(DefaultRescore)},
		{"sketch", mx.Sketch()},
		{"subset", subsetOf(tb, mx, rows)},
	}
}

func queries(dim, nnz int) (dense []float32, sp Sparse) {
	r := rand.New(rand.NewPCG(uint64(dim), uint64(nnz)))
	dense = make([]float32, dim)
	for _, j := range r.Perm(dim)[:nnz] {
		dense[j] = float32(r.NormFloat64())
	}
	Normalize(dense)
	return dense, sparseOf(dense)
}

// Dot gives a row the score Scores gives it, bit for bit, in every
// layout: a ranker may score some rows one by one and the rest all at
// once (rank's hybrid ranking over a binary index) and must rank alike
// either way.
func TestDotIsScore(t *testing.T) {
	const rows, dim = blockRows + 300, 96
	dense, sp := queries(dim, 30)
	for _, full := range []int{3, 10} {
		for _, l := range layouts(t, rows, dim, full) {
			for _, q := range []Query{{Dense: dense}, {Sparse: sp}} {
				scores := make([]float32, rows)
				if err := l.mx.Scores(q, scores); err != nil {
					t.Fatal(err)
				}
				for row := range rows {
					if got := l.mx.Dot(q, row); got != scores[row] {
						t.Fatalf("%s, %d in 10 full, dense=%t: row %d: Dot %v, Scores %v", l.name, full, q.Dense != nil, row, got, scores[row])
					}
				}
			}
		}
	}
}

// The costs follow what a layout reads: a query of more columns costs
// more, a matrix of twice the rows about twice as much, one row less
// than all of them.
func TestScanCost(t *testing.T) {
	const dim = 128
	small, large := layouts(t, 1000, dim, 3), layouts(t, 2000, dim, 3)
	few, _ := queries(dim, 8)
	many, _ := queries(dim, 100)
	for i, l := range small {
		fewSp, manySp := Query{Sparse: sparseOf(few)}, Query{Sparse: sparseOf(many)}
		// A binary code's words may hold either query's columns.
		if c1, c2 := l.mx.ScanCost(fewSp), l.mx.ScanCost(manySp); c1 > c2 || c1 == c2 && l.mx.codes == nil {
			t.Errorf("%s: a query of 8 columns costs %v, of 100 %v", l.name, c1, c2)
		}
		for _, q := range []Query{fewSp, manySp, {Dense: many}} {
			// A binary index rescores as many rows at any size.
			c1, c2 := l.mx.ExactCost(q), large[i].mx.ExactCost(q)
			if r := float64(c2) / float64(c1); r < 1.7 || r > 2.3 {
				t.Errorf("%s: 1,000 rows cost %v, 2,000 %v", l.name, c1, c2)
			}
			if c1, c2 := l.mx.ScanCost(q), large[i].mx.ScanCost(q); c1 >= c2 {
				t.Errorf("%s: 1,000 rows cost %v, 2,000 %v", l.name, c1, c2)
			}
			if e := l.mx.ExactCost(q); l.mx.codes == nil && e != l.mx.ScanCost(q) {
				t.Errorf("%s: an exact matrix's scan costs %v, its exact scores %v", l.name, l.mx.ScanCost(q), e)
			}
			if l.mx.DotCost(q) <= 0 || l.mx.DotCost(q) >= l.mx.ExactCost(q) {
				t.Errorf("%s: a row costs %v, every row %v", l.name, l.mx.DotCost(q), l.mx.ExactCost(q))
			}
		}
	}
}

// BenchmarkCost measures what ScanCost and DotCost estimate, in each
// layout, and reports the estimate over the time taken (est/real): about
// 1 where the constants of cost.go hold, above it where the rows sit in
// cache (4,000 of them) and the estimate, made for large indexes, runs
// high (BENCHMARKS.md, "What a search costs").
// The sizes are those of the service at 100,000 tools: the local
// embedder's 1,024 columns, about 30 % of them set, kept by column, a
// provider's 1,536 dense; queries of a few words (32 nonzeros) and of a
// long text (800).
func BenchmarkCost(b *testing.B) {
	for _, c := range []struct {
		rows, dim, full int
		nnz             []int
	}{{100_000, 1024, 3, []int{32, 800}}, {100_000, 1536, 10, []int{1536}}, {4000, 1024, 3, []int{32, 800}}} {
		for _, l := range layouts(b, c.rows, c.dim, c.full) {
			for _, nnz := range c.nnz {
				dense, sp := queries(c.dim, nnz)
				q := Query{Dense: dense}
				if nnz*4 <= c.dim {
					q = Query{Sparse: sp}
				}
				name := fmt.Sprintf("N=%d/D=%d/nnz=%d/%s", c.rows, c.dim, nnz, l.name)
				b.Run(name+"/scan", func(b *testing.B) {
					for b.Loop() {
						if _, err := l.mx.Candidates(q, 10, nil); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(float64(l.mx.ScanCost(q))/(float64(b.Elapsed())/float64(b.N)), "est/real")
				})
				b.Run(name+"/dot", func(b *testing.B) {
					row := 0
					for b.Loop() {
						l.mx.Dot(q, row)
						row = (row + 7919) % c.rows
					}
					b.ReportMetric(float64(l.mx.DotCost(q))/(float64(b.Elapsed())/float64(b.N)), "est/real")
				})
			}
		}
	}
}
