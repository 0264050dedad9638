package index

import (
	"fmt"
	"slices"
	"sync"

	"gonum.org/v1/gonum/blas/blas32"
)

// ByColumn reports whether a matrix of rows×dim is kept by column: too
// large for the sparse product to find its rows' columns in cache, so a
// sparse query would have to read every row (see sparseMaxBytes). Kept by
// column, a query with tens of nonzeros reads tens of columns, a few
// percent of the matrix, whatever its size. Only sparse embeddings (the
// local embedder's) gain; a dense one reads all of it either way.
func ByColumn(rows, dim int) bool { return int64(rows)*int64(dim)*4 > sparseMaxBytes }

// tileRows is the most rows a tile holds: a row's place in its tile fits
// a byte, and the tile's sums (1 KiB) stay in the first-level cache while
// a query's columns stream past.
const tileRows = 256

// tile is rows [first, first+n) of a matrix kept by column, holding only
// their nonzero values: column j's are val[start[j]:start[j+1]], in rows
// first+off[…], ascending. The local embedder's rows are about 70 %
// zeros, so a value and its row take 5 bytes where the dense column took
// 4 a row, zero or not (100,000 tools: 148 MB, not 410).
type tile struct {
	first, n int
	start    []int32 // dim+1
	off      []uint8
	val      []float32
}

// Columns is a matrix filled row batch by row batch and kept by column,
// in tiles of rows: each row is normalised as it is set. SetRows may be
// called from several goroutines for different rows.
type Columns struct {
	rows, dim int
	mu        sync.Mutex
	tiles     []tile
}

// NewColumns starts a matrix of rows×dim kept by column.
func NewColumns(rows, dim int) *Columns {
	return &Columns{rows: rows, dim: dim, tiles: make([]tile, 0, (rows+tileRows-1)/tileRows)}
}

// SetRows sets rows first, first+1, … from block, row-major (its length a
// multiple of the width), normalising each to unit length as New would.
// block is normalised in place and not kept.
func (c *Columns) SetRows(first int, block []float32) {
	n := len(block) / c.dim
	for lo := 0; lo < n; lo += tileRows {
		hi := min(lo+tileRows, n)
		t := c.tile(first+lo, block[lo*c.dim:hi*c.dim])
		c.mu.Lock()
		c.tiles = append(c.tiles, t)
		c.mu.Unlock()
	}
}

// tile normalises the rows of block, rows first…, and keeps their
// nonzeros by column.
func (c *Columns) tile(first int, block []float32) tile {
	n := len(block) / c.dim
	t := tile{first: first, n: n, start: make([]int32, c.dim+1)}
	for r := range n {
		row := block[r*c.dim : (r+1)*c.dim]
		Normalize(row)
		for j, x := range row {
			if x != 0 {
				t.start[j+1]++
			}
		}
	}
	for j := range c.dim {
		t.start[j+1] += t.start[j]
	}
	t.off, t.val = make([]uint8, t.start[c.dim]), make([]float32, t.start[c.dim])
	at := slices.Clone(t.start[:c.dim])
	for r := range n {
		for j, x := range block[r*c.dim : (r+1)*c.dim] {
			if x != 0 {
				t.off[at[j]], t.val[at[j]] = uint8(r), x
				at[j]++
			}
		}
	}
	return t
}

// Matrix is the filled matrix; c must not be used after.
func (c *Columns) Matrix() (*Matrix, error) {
	if c.rows == 0 || c.dim == 0 {
		return nil, fmt.Errorf("index: %d rows of width %d", c.rows, c.dim)
	}
	slices.SortFunc(c.tiles, func(a, b tile) int { return a.first - b.first })
	next := 0
	for _, t := range c.tiles {
		if t.first != next {
			return nil, fmt.Errorf("index: rows %d to %d not set", next, t.first-1)
		}
		next += t.n
	}
	if next != c.rows {
		return nil, fmt.Errorf("index: %d rows set of %d", next, c.rows)
	}
	mx := &Matrix{m: blas32.General{Rows: c.rows, Cols: c.dim, Stride: c.dim}, tiles: c.tiles}
	mx.scratch.New = func() any {
		s := make([]float32, mx.m.Rows)
		return &s
	}
	return mx, nil
}

// columnScores is ScoresInto for a matrix kept by column: q's cosine with
// every row is the sum of q's values times their columns, taken in column
// order as Gemv sums them.
func (mx *Matrix) columnScores(q, dst []float32) {
	dst = dst[:mx.m.Rows]
	for i := range mx.tiles {
		t := &mx.tiles[i]
		out := dst[t.first : t.first+t.n]
		clear(out)
		for j, v := range q {
			if v != 0 {
				t.addColumn(j, v, out)
			}
		}
	}
}

// sparseColumnScores is SparseScoresInto for a matrix kept by column.
// Each row's sum runs over q's nonzeros in order, as the row-major product
// sums them; the zeros it skips add nothing, not even a sign, to a sum
// that starts at +0, so both give the same scores bit for bit.
func (mx *Matrix) sparseColumnScores(q Sparse, dst []float32) {
	dst = dst[:mx.m.Rows]
	idx, val := q.Idx, q.Val[:len(q.Idx)]
	for i := range mx.tiles {
		t := &mx.tiles[i]
		out := dst[t.first : t.first+t.n]
		clear(out)
		for k, j := range idx {
			t.addColumn(int(j), val[k], out)
		}
	}
}

// addColumn adds v times column j to out, the tile's sums.
func (t *tile) addColumn(j int, v float32, out []float32) {
	lo, hi := t.start[j], t.start[j+1]
	off, val := t.off[lo:hi], t.val[lo:hi]
	val = val[:len(off)]
	for e, o := range off {
		out[o] += v * val[e]
	}
}

// at is the value at row (of the tile) and column j.
func (t *tile) at(row, j int) float32 {
	lo, hi := t.start[j], t.start[j+1]
	if e, ok := slices.BinarySearch(t.off[lo:hi], uint8(row)); ok {
		return t.val[int(lo)+e]
	}
	return 0
}

// tileOf is the tile that holds row.
func (mx *Matrix) tileOf(row int) *tile {
	i, _ := slices.BinarySearchFunc(mx.tiles, row, func(t tile, row int) int {
		switch {
		case row < t.first:
			return 1
		case row >= t.first+t.n:
			return -1
		}
		return 0
	})
	return &mx.tiles[i]
}

// columnRow is Row for a matrix kept by column: a copy.
func (mx *Matrix) columnRow(i int) []float32 {
	t := mx.tileOf(i)
	row := make([]float32, mx.m.Cols)
	for j := range row {
		row[j] = t.at(i-t.first, j)
	}
	return row
}

// columnDot is Dot for a matrix kept by column. Like the products, it
// skips the columns q or the row has nothing in, which add nothing.
func (mx *Matrix) columnDot(q Query, row int) float32 {
	t := mx.tileOf(row)
	var s float32
	if q.Dense != nil {
		for j, v := range q.Dense {
			if v != 0 {
				s += v * t.at(row-t.first, j)
			}
		}
		return s
	}
	for k, j := range q.Sparse.Idx {
		s += q.Sparse.Val[k] * t.at(row-t.first, int(j))
	}
	return s
}

// eachNonzero calls f with every nonzero value of a matrix kept by
// column, tile by tile, column by column.
func (mx *Matrix) eachNonzero(f func(row, col int, x float32)) {
	for i := range mx.tiles {
		t := &mx.tiles[i]
		for j := range mx.m.Cols {
			for e := t.start[j]; e < t.start[j+1]; e++ {
				f(t.first+int(t.off[e]), j, t.val[e])
			}
		}
	}
}

// columnBytes is the memory of a matrix kept by column.
func (mx *Matrix) columnBytes() int64 {
	var b int64
	for i := range mx.tiles {
		t := &mx.tiles[i]
		b += int64(cap(t.start))*4 + int64(cap(t.off)) + int64(cap(t.val))*4
	}
	return b
}
