package index

import (
	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/gonum"
)

// Sparse is a query vector given by its nonzero entries, in column order.
// The local embedder's queries are like this: tens of hashed features
// among a thousand columns.
type Sparse struct {
	Idx []int32
	Val []float32
}

// sparseMaxBytes bounds the matrices for which PreferSparse says yes. A
// sparse product reads a few floats per row, each from another cache line,
// in an order no prefetcher follows: it beats Gemv while the matrix stays in
// cache and loses to Gemv's streaming once it does not. On the reference
// machine (32 MiB L3) it is 3x faster up to 8 MB, 1.7x at 16 MB and 0.7x
// at 40 MB (BENCHMARKS.md).
const sparseMaxBytes = 16 << 20

// PreferSparse reports whether a query with nnz nonzeros is scored faster
// by SparseScoresInto than by ScoresInto on this matrix.
func (mx *Matrix) PreferSparse(nnz int) bool {
	return nnz*4 <= mx.m.Cols && (mx.blocks != nil || mx.rowBytes() <= sparseMaxBytes)
}

// rowBytes is the memory of the rows of a matrix kept by row.
func (mx *Matrix) rowBytes() int64 {
	var n int64
	for _, s := range mx.slabs {
		n += int64(cap(s.m.Data))
	}
	return n * 4
}

// WithColumns returns mx holding its values a second time, column by
// column, for SparseScoresInto: a sparse query then reads each of its
// columns as one run and adds it to every row's score with gonum's vector
// code (Saxpy), instead of gathering a value from another cache line for
// each row and column. A product of 64 nonzeros takes 0.6 of the time at
// 62 rows and a seventh at 1,000 and 4,000 rows (BenchmarkSparse,
// BENCHMARKS.md step 23). Only a matrix kept by row and queried sparsely
// (the local embedder's) gains, and only while it is small enough to be
// kept by row (not ByColumn): the copy costs its size again, at most
// sparseMaxBytes. Other matrices are returned as they are.
func (mx *Matrix) WithColumns() *Matrix {
	if mx.sketch != nil || mx.of != nil || mx.blocks != nil || mx.cols != nil || mx.rowBytes() > sparseMaxBytes {
		return mx
	}
	rows, dim := mx.m.Rows, mx.m.Cols
	cols := make([]float32, rows*dim)
	for r := range rows {
		for j, x := range mx.Row(r) {
			cols[j*rows+r] = x
		}
	}
	q := mx.derive()
	q.cols = cols
	return q
}

// SparseScoresInto is ScoresInto for a sparse q (unit length, like any
// query): it reads only q's columns of each row. The scores equal Gemv's up
// to float32 rounding of the sums.
func (mx *Matrix) SparseScoresInto(q Sparse, dst []float32) error {
	if err := mx.checkQuery(Query{Sparse: q}); err != nil {
		return err
	}
	if mx.sketch != nil {
		mx.sketchScores(Query{Sparse: q}, dst)
		return nil
	}
	if mx.of != nil {
		mx.subsetScores(Query{Sparse: q}, dst)
		return nil
	}
	if mx.blocks != nil {
		mx.sparseColumnScores(q, dst)
		return nil
	}
	if mx.cols != nil {
		mx.axpyScores(q, dst)
		return nil
	}
	for _, s := range mx.slabs {
		sparseRows(s.m, q, dst[s.first:s.first+s.m.Rows])
	}
	return nil
}

// sparseRows writes q's product with each row of m into dst.
func sparseRows(m blas32.General, q Sparse, dst []float32) {
	cols := m.Cols
	data, stride, rows := m.Data, m.Stride, m.Rows
	dst = dst[:rows]
	idx, val := q.Idx, q.Val[:len(q.Idx)]
	// Four rows at a time: four independent sums, and each index and value
	// loaded once for all four.
	r := 0
	for ; r+4 <= rows; r += 4 {
		// Each row sliced to exactly cols, so that one check of an index
		// against cols bounds all four reads.
		r0 := data[r*stride:][:cols]
		r1 := data[(r+1)*stride:][:cols]
		r2 := data[(r+2)*stride:][:cols]
		r3 := data[(r+3)*stride:][:cols]
		var s0, s1, s2, s3 float32
		for k, j := range idx {
			v := val[k]
			if uint(j) >= uint(cols) {
				panic("index: a sparse query's column out of range") // checkQuery rules it out
			}
			s0 += v * r0[j]
			s1 += v * r1[j]
			s2 += v * r2[j]
			s3 += v * r3[j]
		}
		dst[r], dst[r+1], dst[r+2], dst[r+3] = s0, s1, s2, s3
	}
	for ; r < rows; r++ {
		row := data[r*stride : r*stride+cols]
		var s float32
		for k, j := range idx {
			s += val[k] * row[j]
		}
		dst[r] = s
	}
}

// axpyScores is SparseScoresInto through mx.cols: each row's score is
// summed over q's nonzeros in order, each product rounded and then added,
// as the row-major loop above sums it, so that both give the same scores
// bit for bit (TestColumnsScoreAsRows). That holds as the service is
// built: on amd64 Go fuses no multiply and add below GOAMD64=v3, and
// gonum's SSE code fuses none either.
func (mx *Matrix) axpyScores(q Sparse, dst []float32) {
	rows := mx.m.Rows
	dst = dst[:rows]
	clear(dst)
	var impl gonum.Implementation // called directly: no interface call a column
	for k, j := range q.Idx {
		impl.Saxpy(rows, q.Val[k], mx.cols[int(j)*rows:][:rows], 1, dst, 1)
	}
}
