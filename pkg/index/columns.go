package index

import (
	"fmt"
	mathbits "math/bits"
	"slices"
	"sync"

	"gonum.org/v1/gonum/blas/blas32"

	"github.com/toolsearch/toolsearch/pkg/internal/prefault"
)

// ByColumn reports whether a matrix of rows×dim is kept by column: too
// large for the sparse product to find its rows' columns in cache, so a
// sparse query would have to read every row (see sparseMaxBytes). Kept by
// column, a query with tens of nonzeros reads tens of columns, a few
// percent of the matrix, whatever its size. Only sparse embeddings (the
// local embedder's) gain; a dense one reads all of it either way.
func ByColumn(rows, dim int) bool { return int64(rows)*int64(dim)*4 > sparseMaxBytes }

// A matrix kept by column holds only its nonzero values, each with its
// row's place in a piece of at most pieceRows rows (one byte). The local
// embedder's rows are about 70 % zeros, so a value takes 5 bytes where a
// dense column took 4 a row, zero or not (100,000 tools: 150 MB, not
// 410). Pieces are grouped in blocks of blockRows rows whose sums (16 KiB)
// stay in the first-level cache while a query's columns stream past; in a
// block, each column's values lie end to end, piece after piece, so that
// a query reads a few long runs and not thousands of short ones.
const (
	pieceRows = 256
	blockRows = 4096 // a power of two: see addColumn
)

// piece is rows [first, first+n) as SetRows gets them: column j's
// nonzeros are val[start[j]:start[j+1]], in rows first+off[…], ascending.
type piece struct {
	first, n int
	start    []int32 // dim+1
	off      []uint8
	val      []float32
}

// block is rows [first, first+n) of a matrix kept by column, in np pieces:
// piece p's rows start at base[p] (within the block), and its nonzeros in
// column j are entries start[j*np+p] to start[j*np+p+1] of off and val,
// so column j's are start[j*np] to start[(j+1)*np]. A block whose rows
// are so full that this would take more than its values dense keeps them
// dense instead, column j being dense[j*n:(j+1)*n]: long texts fill most
// of the local embedder's columns, and then a block costs at most what a
// dense one would.
type block struct {
	first, n, np int
	base         []int32 // np
	start        []int32 // dim*np+1
	off          []uint8
	val          []float32
	dense        []float32
}

// Columns is a matrix filled row batch by row batch and kept by column:
// each row is normalised as it is set, and each block put together as
// soon as its rows are all set, so that its pieces are let go then and
// the rows are not held twice. SetRows may be called from several
// goroutines for different rows.
type Columns struct {
	rows, dim int
	words     int       // of a row's touched bits (SetRows)
	scratch   sync.Pool // *pieceScratch
	mu        sync.Mutex
	pending   [][]piece // by block, until it is whole
	filled    []int     // rows set, by block
	blocks    []block
}

// NewColumns starts a matrix of rows×dim kept by column.
func NewColumns(rows, dim int) *Columns {
	n := (rows + blockRows - 1) / blockRows
	c := &Columns{rows: rows, dim: dim, words: (dim + 63) / 64, pending: make([][]piece, n), filled: make([]int, n), blocks: make([]block, n)}
	c.scratch.New = func() any { return new(pieceScratch) }
	return c
}

// SetRows sets rows first, first+1, … from block, row-major (its length a
// multiple of the width), normalising each to unit length as a Draft does.
// touched marks each row's columns that may be nonzero, a bit each in
// (width+63)/64 words a row (embedding.Rows), and only those are read: a
// column it leaves out must be zero. Neither is kept.
func (c *Columns) SetRows(first int, block []float32, touched []uint64) {
	n := len(block) / c.dim
	for lo := 0; lo < n; {
		// A piece holds at most pieceRows rows, all of one block.
		row := first + lo
		hi := min(lo+pieceRows, n, lo+blockRows-row%blockRows)
		c.add(row/blockRows, c.piece(row, block[lo*c.dim:hi*c.dim], touched[lo*c.words:hi*c.words]))
		lo = hi
	}
}

// add files p under block k, and puts the block together once it is
// whole.
func (c *Columns) add(k int, p piece) {
	c.mu.Lock()
	c.pending[k] = append(c.pending[k], p)
	c.filled[k] += p.n
	var whole []piece
	if c.filled[k] == min(blockRows, c.rows-k*blockRows) {
		whole, c.pending[k] = c.pending[k], nil
	}
	c.mu.Unlock()
	if whole != nil {
		slices.SortFunc(whole, func(a, b piece) int { return a.first - b.first })
		c.blocks[k] = c.block(whole)
	}
}

// piece normalises the rows of block, rows first…, and keeps their
// nonzeros by column. Each row's touched columns (SetRows) are read
// twice, for its length and for its nonzeros, scaled as Normalize scales
// them; the rest of the work is on the nonzeros alone.
func (c *Columns) piece(first int, block []float32, touched []uint64) piece {
	n := len(block) / c.dim
	p := piece{first: first, n: n, start: make([]int32, c.dim+1)}
	sc := c.scratch.Get().(*pieceScratch)
	defer c.scratch.Put(sc)
	cols, vals, ends := sc.cols[:0], sc.vals[:0], sc.ends[:0]
	for r := range n {
		row, bits := block[r*c.dim:(r+1)*c.dim], touched[r*c.words:(r+1)*c.words]
		if norm := normTouched(row, bits); norm != 0 {
			inv := float32(1 / norm)
			for w, word := range bits {
				for ; word != 0; word &= word - 1 {
					j := w*64 + mathbits.TrailingZeros64(word)
					if x := row[j]; x != 0 {
						cols, vals = append(cols, int32(j)), append(vals, x*inv)
						p.start[j+1]++
					}
				}
			}
		}
		ends = append(ends, int32(len(cols)))
	}
	sc.cols, sc.vals, sc.ends = cols, vals, ends
	for j := range c.dim {
		p.start[j+1] += p.start[j]
	}
	p.off, p.val = make([]uint8, len(cols)), make([]float32, len(cols))
	at := append(sc.at[:0], p.start[:c.dim]...)
	sc.at = at
	e := 0
	for r, end := range ends {
		for ; e < int(end); e++ {
			j := cols[e]
			p.off[at[j]], p.val[at[j]] = uint8(r), vals[e]
			at[j]++
		}
	}
	return p
}

// pieceScratch is piece's working memory: the nonzeros of a piece's rows
// in row order (their columns and values, and where each row ends), and
// each column's cursor.
type pieceScratch struct {
	cols, ends, at []int32
	vals           []float32
}

// Matrix is the filled matrix; c must not be used after.
func (c *Columns) Matrix() (*Matrix, error) {
	if c.rows == 0 || c.dim == 0 {
		return nil, fmt.Errorf("index: %d rows of width %d", c.rows, c.dim)
	}
	for k, b := range c.blocks {
		if want := min(blockRows, c.rows-k*blockRows); b.n != want {
			return nil, fmt.Errorf("index: %d of rows %d to %d set", c.filled[k], k*blockRows, k*blockRows+want-1)
		}
	}
	return newMatrix(blas32.General{Rows: c.rows, Cols: c.dim, Stride: c.dim}, nil, c.blocks), nil
}

// block lays pieces, consecutive rows, out column by column.
func (c *Columns) block(pieces []piece) block {
	np := len(pieces)
	b := block{first: pieces[0].first, np: np, base: make([]int32, np), start: make([]int32, c.dim*np+1)}
	for p, pc := range pieces {
		b.base[p] = int32(b.n)
		b.n += pc.n
	}
	for j := range c.dim {
		for p, pc := range pieces {
			i := j*np + p
			b.start[i+1] = b.start[i] + pc.start[j+1] - pc.start[j]
		}
	}
	total := b.start[c.dim*np]
	if int64(total)*5+int64(len(b.start))*4 >= int64(b.n)*int64(c.dim)*4 {
		b.base, b.start, b.dense = nil, nil, make([]float32, c.dim*b.n)
		for _, pc := range pieces {
			at := pc.first - b.first
			for j := range c.dim {
				col := b.dense[j*b.n+at : (j+1)*b.n]
				for e := pc.start[j]; e < pc.start[j+1]; e++ {
					col[pc.off[e]] = pc.val[e]
				}
			}
		}
		return b
	}
	b.off, b.val = prefault.Make[uint8](int(total)), prefault.Make[float32](int(total))
	for j := range c.dim {
		for p, pc := range pieces {
			at := b.start[j*np+p]
			copy(b.off[at:], pc.off[pc.start[j]:pc.start[j+1]])
			copy(b.val[at:], pc.val[pc.start[j]:pc.start[j+1]])
		}
	}
	return b
}

// columnScores is ScoresInto for a matrix kept by column: q's nonzeros,
// in column order as Gemv sums them, through the sparse product.
func (mx *Matrix) columnScores(q, dst []float32) {
	var sp Sparse
	for j, v := range q {
		if v != 0 {
			sp.Idx, sp.Val = append(sp.Idx, int32(j)), append(sp.Val, v)
		}
	}
	mx.sparseColumnScores(sp, dst)
}

// sparseColumnScores is SparseScoresInto for a matrix kept by column.
// Each row's sum runs over q's nonzeros in order, as the row-major product
// sums them; the zeros it skips add nothing, not even a sign, to a sum
// that starts at +0, so both give the same scores bit for bit.
func (mx *Matrix) sparseColumnScores(q Sparse, dst []float32) {
	dst = dst[:mx.m.Rows]
	idx, val := q.Idx, q.Val[:len(q.Idx)]
	var sums [blockRows]float32
	for i := range mx.blocks {
		b := &mx.blocks[i]
		clear(sums[:])
		for k, j := range idx {
			b.addColumn(int(j), val[k], &sums)
		}
		copy(dst[b.first:b.first+b.n], sums[:])
	}
}

// addColumn adds v times column j to sums, the block's. A row's place
// (under blockRows) is masked into the array, which spares a bounds check.
func (b *block) addColumn(j int, v float32, sums *[blockRows]float32) {
	if b.dense != nil {
		for r, x := range b.dense[j*b.n : (j+1)*b.n] {
			sums[r&(blockRows-1)] += v * x
		}
		return
	}
	s := b.start[j*b.np : (j+1)*b.np+1]
	base := b.base[:len(s)-1]
	for p, at := range base {
		off, val := b.off[s[p]:s[p+1]], b.val[s[p]:s[p+1]]
		val = val[:len(off)]
		for e, o := range off {
			sums[(int(at)+int(o))&(blockRows-1)] += v * val[e]
		}
	}
}

// at is the value at row (of the matrix) and column j, in block b.
func (b *block) at(row, j int) float32 {
	r := row - b.first
	if b.dense != nil {
		return b.dense[j*b.n+r]
	}
	p, ok := slices.BinarySearch(b.base, int32(r))
	if !ok {
		p--
	}
	lo, hi := b.start[j*b.np+p], b.start[j*b.np+p+1]
	if e, ok := slices.BinarySearch(b.off[lo:hi], uint8(r-int(b.base[p]))); ok {
		return b.val[int(lo)+e]
	}
	return 0
}

// blockOf is the block that holds row.
func (mx *Matrix) blockOf(row int) *block {
	i, _ := slices.BinarySearchFunc(mx.blocks, row, func(b block, row int) int {
		switch {
		case row < b.first:
			return 1
		case row >= b.first+b.n:
			return -1
		}
		return 0
	})
	return &mx.blocks[i]
}

// columnRow is Row for a matrix kept by column: a copy.
func (mx *Matrix) columnRow(i int) []float32 {
	b := mx.blockOf(i)
	row := make([]float32, mx.m.Cols)
	for j := range row {
		row[j] = b.at(i, j)
	}
	return row
}

// columnDot is Dot for a matrix kept by column. Like the products, it
// skips what adds nothing: the columns q or the row has nothing in.
func (mx *Matrix) columnDot(q Query, row int) float32 {
	b := mx.blockOf(row)
	var s float32
	if q.Dense != nil {
		for j, v := range q.Dense {
			if v != 0 {
				s += v * b.at(row, j)
			}
		}
		return s
	}
	for k, j := range q.Sparse.Idx {
		s += q.Sparse.Val[k] * b.at(row, int(j))
	}
	return s
}

// rowsInto writes the block's rows, of width dim, into dst (b.n×dim,
// zero), row-major: what Vectors and All read of a matrix kept by column.
func (b *block) rowsInto(dim int, dst []float32) {
	for j := range dim {
		if b.dense != nil {
			for r, x := range b.dense[j*b.n : (j+1)*b.n] {
				if x != 0 { // as the sparse path: only nonzeros are written
					dst[r*dim+j] = x
				}
			}
			continue
		}
		for p := range b.np {
			base := int(b.base[p])
			for e := b.start[j*b.np+p]; e < b.start[j*b.np+p+1]; e++ {
				dst[(base+int(b.off[e]))*dim+j] = b.val[e]
			}
		}
	}
}

// columnBytes is the memory of a matrix kept by column.
func (mx *Matrix) columnBytes() int64 {
	var n int64
	for i := range mx.blocks {
		b := &mx.blocks[i]
		n += int64(cap(b.base)+cap(b.start)+cap(b.val)+cap(b.dense))*4 + int64(cap(b.off))
	}
	return n
}
