package index

import (
	"fmt"
	"sync"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
)

// ByColumn reports whether a matrix of rows×dim is kept by column: too
// large for the sparse product to find its rows' columns in cache, so a
// sparse query would have to read every row (see sparseMaxBytes). Kept by
// column, a query with tens of nonzeros reads tens of contiguous columns,
// a few percent of the matrix, whatever its size. Only sparse embeddings
// (the local embedder's) gain; a dense one reads all of it either way.
func ByColumn(rows, dim int) bool { return int64(rows)*int64(dim)*4 > sparseMaxBytes }

// Columns is a matrix filled row batch by row batch and kept by column
// (dim columns of rows values each): each row is normalised as it is set.
// SetRows may be called from several goroutines for different rows.
type Columns struct {
	data       []float32 // column j is data[j*rows : (j+1)*rows]
	rows, dim  int
	normalized sync.Pool // *[]float32 scratch of one row
}

// NewColumns allocates a matrix of rows×dim kept by column.
func NewColumns(rows, dim int) *Columns {
	c := &Columns{data: make([]float32, rows*dim), rows: rows, dim: dim}
	c.normalized.New = func() any {
		s := make([]float32, dim)
		return &s
	}
	return c
}

// SetRows sets rows first, first+1, … from block, row-major (its length a
// multiple of the width), normalising each to unit length as New would.
// block is not kept.
func (c *Columns) SetRows(first int, block []float32) {
	sp := c.normalized.Get().(*[]float32)
	defer c.normalized.Put(sp)
	row := *sp
	for k := 0; k*c.dim < len(block); k++ {
		copy(row, block[k*c.dim:(k+1)*c.dim])
		Normalize(row)
		r := first + k
		for j, x := range row {
			c.data[j*c.rows+r] = x
		}
	}
}

// Matrix is the filled matrix; c must not be used after.
func (c *Columns) Matrix() (*Matrix, error) {
	if c.rows == 0 || c.dim == 0 {
		return nil, fmt.Errorf("index: %d rows of width %d", c.rows, c.dim)
	}
	mx := &Matrix{m: blas32.General{Rows: c.rows, Cols: c.dim, Stride: c.dim}, t: c.data}
	mx.scratch.New = func() any {
		s := make([]float32, mx.m.Rows)
		return &s
	}
	return mx, nil
}

// columnScores is ScoresInto for a matrix kept by column: q's cosine with
// every row is the sum of q's values times their columns.
func (mx *Matrix) columnScores(q, dst []float32) {
	t := blas32.General{Rows: mx.m.Cols, Cols: mx.m.Rows, Stride: mx.m.Rows, Data: mx.t}
	blas32.Gemv(blas.Trans, 1, t, blas32.Vector{N: len(q), Inc: 1, Data: q}, 0, blas32.Vector{N: mx.m.Rows, Inc: 1, Data: dst[:mx.m.Rows]})
}

// columnTile is how many rows a sparse product over columns sums at once:
// their sums (16 KiB) stay in the first-level cache while each column's
// part streams past.
const columnTile = 4096

// sparseColumnScores is SparseScoresInto for a matrix kept by column.
// Each row's sum runs over q's nonzeros in order, as the row-major product
// sums them, so both give the same scores bit for bit.
func (mx *Matrix) sparseColumnScores(q Sparse, dst []float32) {
	n := mx.m.Rows
	dst = dst[:n]
	idx, val := q.Idx, q.Val[:len(q.Idx)]
	for lo := 0; lo < n; lo += columnTile {
		hi := min(lo+columnTile, n)
		out := dst[lo:hi]
		clear(out)
		for k, j := range idx {
			v := val[k]
			col := mx.t[int(j)*n+lo : int(j)*n+hi]
			col = col[:len(out)]
			for r, x := range col {
				out[r] += v * x
			}
		}
	}
}
