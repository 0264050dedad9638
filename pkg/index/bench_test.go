package index

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
)

var benchSizes = []struct{ n, d int }{
	{62, 256}, {62, 1536}, {1000, 256}, {1000, 1536}, {10000, 256}, {10000, 1536}, {100000, 256}, {100000, 1536},
}

func benchMatrix(tb testing.TB, n, d int) (*Matrix, []float32) {
	tb.Helper()
	r := rand.New(rand.NewPCG(uint64(n), uint64(d)))
	vecs := make([][]float32, n)
	for i := range vecs {
		v := make([]float32, d)
		for j := range v {
			v[j] = float32(r.NormFloat64())
		}
		vecs[i] = v
	}
	mx := blockOf(tb, vecs)
	q := make([]float32, d)
	for j := range q {
		q[j] = float32(r.NormFloat64())
	}
	Normalize(q)
	return mx, q
}

// BenchmarkSearch is the ranking core: one matrix-vector product and a
// top-10 selection. Compare each size with BenchmarkFloor, the bare Gemv
// over the same matrix, from the same run (benchstat, or the ratio in
// BENCHMARKS.md).
func BenchmarkSearch(b *testing.B) {
	for _, s := range benchSizes {
		b.Run(fmt.Sprintf("N=%d/D=%d", s.n, s.d), func(b *testing.B) {
			mx, q := benchMatrix(b, s.n, s.d)
			for b.Loop() {
				if _, err := mx.Candidates(Query{Dense: q}, 10, nil); err != nil {
					b.Fatal(err)
				}
			}
			// After the loop: resetting the timer would drop them.
			b.ReportMetric(float64(mx.Bytes())/float64(s.n), "bytes/tool")
			b.ReportMetric(float64(mx.Bytes())/float64(4*s.n*s.d), "mem/4ND")
		})
	}
}

// BenchmarkFloor is the hardware floor for BenchmarkSearch: blas32.Gemv
// alone, into a preallocated vector.
func BenchmarkFloor(b *testing.B) {
	for _, s := range benchSizes {
		b.Run(fmt.Sprintf("N=%d/D=%d", s.n, s.d), func(b *testing.B) {
			mx, q := benchMatrix(b, s.n, s.d)
			y := make([]float32, s.n)
			for b.Loop() {
				blas32.Gemv(blas.NoTrans, 1, mx.slabs[0].m, blas32.Vector{N: len(q), Inc: 1, Data: q}, 0, blas32.Vector{N: len(y), Inc: 1, Data: y})
			}
		})
	}
}

// BenchmarkSparse compares the sparse product for a local-embedder-like
// query (64 nonzeros among 1,024 columns) with Gemv over the same matrix,
// from the same run: where the sparse product stops paying is where
// PreferSparse must say no.
func BenchmarkSparse(b *testing.B) {
	const d, nnz = 1024, 64
	for _, n := range []int{62, 1000, 2000, 4000, 10000} {
		mx, _ := benchMatrix(b, n, d)
		r := rand.New(rand.NewPCG(5, 6))
		dense := make([]float32, d)
		for _, j := range r.Perm(d)[:nnz] {
			dense[j] = float32(r.NormFloat64())
		}
		sp := sparseOf(dense)
		dst := make([]float32, n)
		b.Run(fmt.Sprintf("N=%d/gemv", n), func(b *testing.B) {
			for b.Loop() {
				if err := mx.ScoresInto(dense, dst); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("N=%d/sparse", n), func(b *testing.B) {
			for b.Loop() {
				if err := mx.SparseScoresInto(sp, dst); err != nil {
					b.Fatal(err)
				}
			}
		})
		if cols := mx.WithColumns(); cols != mx {
			b.Run(fmt.Sprintf("N=%d/columns", n), func(b *testing.B) {
				for b.Loop() {
					if err := cols.SparseScoresInto(sp, dst); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		// The binary first pass with rescoring, top 10: a whole search,
		// where the two above are only its scores.
		bin := mx.WithBinary(DefaultRescore)
		b.Run(fmt.Sprintf("N=%d/binary-top10", n), func(b *testing.B) {
			for b.Loop() {
				if _, err := bin.Candidates(Query{Sparse: sp}, 10, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkBinary compares the opt-in binary first pass (codes for every
// row, then DefaultRescore rows rescored exactly) with the exact search, on
// the same matrix and dense query, from the same run. Recall is not
// measured here: random vectors have no structure, so the shared eval sets
// measure it (BENCHMARKS.md).
func BenchmarkBinary(b *testing.B) {
	for _, s := range benchSizes {
		if s.n < 1000 {
			continue
		}
		mx, q := benchMatrix(b, s.n, s.d)
		bin := mx.WithBinary(DefaultRescore)
		for _, c := range []struct {
			name string
			mx   *Matrix
		}{{"exact", mx}, {"binary", bin}} {
			b.Run(fmt.Sprintf("N=%d/D=%d/%s", s.n, s.d, c.name), func(b *testing.B) {
				for b.Loop() {
					if _, err := c.mx.Candidates(Query{Dense: q}, 10, nil); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(c.mx.Bytes())/float64(4*s.n*s.d), "mem/4ND")
			})
		}
	}
}

// BenchmarkInt8Rejected is the int8 index that was not built, measured so
// that BENCHMARKS.md's reason is a number: a plain Go int8 dot product
// (four partial sums) over the rows against Gemv over float32 rows of the
// same shape. Without assembly it is several times slower than gonum's
// SIMD kernel, so it would cut memory 4x but not time.
func BenchmarkInt8Rejected(b *testing.B) {
	const n, d = 10000, 1536
	mx, q := benchMatrix(b, n, d)
	rows, q8 := make([]int8, n*d), make([]int8, d)
	for i, x := range mx.slabs[0].m.Data {
		rows[i] = int8(max(-127, min(127, x*127*8))) // unit rows: a few σ of 1/√d
	}
	for i, x := range q {
		q8[i] = int8(max(-127, min(127, x*127*8)))
	}
	out := make([]int32, n)
	b.Run("int8", func(b *testing.B) {
		for b.Loop() {
			for r := range n {
				out[r] = dotInt8(rows[r*d:(r+1)*d], q8)
			}
		}
	})
	y := make([]float32, n)
	b.Run("float32-gemv", func(b *testing.B) {
		for b.Loop() {
			blas32.Gemv(blas.NoTrans, 1, mx.slabs[0].m, blas32.Vector{N: d, Inc: 1, Data: q}, 0, blas32.Vector{N: n, Inc: 1, Data: y})
		}
	})
}

func dotInt8(a, b []int8) int32 {
	var s0, s1, s2, s3 int32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		x, y := a[i:i+4:i+4], b[i:i+4:i+4]
		s0 += int32(x[0]) * int32(y[0])
		s1 += int32(x[1]) * int32(y[1])
		s2 += int32(x[2]) * int32(y[2])
		s3 += int32(x[3]) * int32(y[3])
	}
	return s0 + s1 + s2 + s3
}

// BenchmarkSlabs is BenchmarkSearch over the same rows kept in one block
// and in a Draft's slabs, as a provider's index is: the ratio of the two
// is what cutting the matrix costs a search.
func BenchmarkSlabs(b *testing.B) {
	for _, s := range []struct{ n, d int }{{1000, 1536}, {4000, 1536}, {10000, 1536}, {100000, 1536}} {
		one, q := benchMatrix(b, s.n, s.d)
		slabs := draftOf(b, one.Vectors(), 0)
		b.Run(fmt.Sprintf("N=%d/D=%d", s.n, s.d), func(b *testing.B) {
			benchTop10(b, q, named{"block", one}, named{"slabs", slabs})
		})
	}
}

// BenchmarkSketch is what a rebuild spends making the serving index's
// sketch (makeRoom), and a search of it against the exact index's, from
// the same run.
func BenchmarkSketch(b *testing.B) {
	for _, s := range []struct{ n, d int }{{10000, 1536}, {100000, 1536}} {
		b.Run(fmt.Sprintf("N=%d/D=%d", s.n, s.d), func(b *testing.B) {
			mx, q := benchMatrix(b, s.n, s.d)
			b.Run("make", func(b *testing.B) {
				for b.Loop() {
					mx.Sketch()
				}
			})
			benchTop10(b, q, named{"exact-top10", mx}, named{"sketch-top10", mx.Sketch()})
		})
	}
}

// BenchmarkSubset is a view's search, 60 % of the rows at random, read
// where they are (Subset) against a copy of them (a Draft), from the
// same run.
func BenchmarkSubset(b *testing.B) {
	for _, s := range []struct{ n, d int }{{10000, 1536}, {100000, 1536}} {
		b.Run(fmt.Sprintf("N=%d/D=%d", s.n, s.d), func(b *testing.B) {
			mx, q := benchMatrix(b, s.n, s.d)
			r := rand.New(rand.NewPCG(1, 2))
			var rows []int
			for i := range s.n {
				if r.IntN(10) < 6 {
					rows = append(rows, i)
				}
			}
			sub, err := mx.Subset(rows)
			if err != nil {
				b.Fatal(err)
			}
			d, err := NewDraft(mx, rows, s.d)
			if err != nil {
				b.Fatal(err)
			}
			benchTop10(b, q, named{"copy", d.Matrix()}, named{"subset", sub})
		})
	}
}

type named struct {
	name string
	mx   *Matrix
}

// benchTop10 runs a sub-benchmark for each matrix: the top 10 of q, and
// the memory the matrix holds of its own (MiB-own: a subset's row
// numbers, not the rows it reads).
func benchTop10(b *testing.B, q []float32, ms ...named) {
	for _, m := range ms {
		b.Run(m.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := m.mx.Candidates(Query{Dense: q}, 10, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(m.mx.Bytes())/(1<<20), "MiB-own")
		})
	}
}
