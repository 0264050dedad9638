// Package index answers nearest-neighbour queries over an immutable matrix of
// L2-normalised tool embeddings.
package index

import (
	"errors"
	"fmt"
	"iter"
	"slices"
	"sync"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
)

// Match is one ranked row: its position in the matrix and its cosine score.
type Match struct {
	Row   int
	Score float32
}

// Matrix holds one unit-length float32 row per tool. It is immutable once
// made (Draft.Matrix, Adopt, Columns.Matrix) and safe for concurrent use.
type Matrix struct {
	m blas32.General // the shape; the values are in slabs or blocks
	// slabs hold a matrix kept by row: runs of rows in allocations of
	// their own (Draft), or one of every row (Adopt).
	slabs []slab
	// blocks, when not nil, hold the rows by column (Columns): a large
	// matrix of sparse embeddings.
	blocks []block
	// colEntries is how many values each column of blocks holds, for
	// ExactCost.
	colEntries []int64
	// cols, when not nil, is m's values again, column by column (see
	// WithColumns).
	cols    []float32
	scratch sync.Pool    // *[]float32 of length Rows, so a search allocates only its result
	codes   *binaryCodes // nil: exact only (see WithBinary)
	// sketch, when not nil, says the matrix holds codes and no values
	// (Sketch), and what they are centred on.
	sketch *centre
	// of, when not nil, are the rows of base this matrix is (Subset).
	base *Matrix
	of   []int32
}

// ErrDimension is returned when a query's width differs from the rows'.
var ErrDimension = errors.New("index: query dimension differs from the index")

// Adopt makes a matrix of data, rows×dim in row-major order, without a
// copy: the rows are normalised in place (a zero row stays zero, and so
// never ranks above a real match), but for those marked normalized
// (normalized may be nil), and data is the matrix's from then
// on (the caller must not touch it). An embedder that writes its vectors
// into one block saves a second copy of every vector at build.
func Adopt(data []float32, rows, dim int, normalized []bool) (*Matrix, error) {
	if rows == 0 || dim == 0 || len(data) != rows*dim {
		return nil, fmt.Errorf("index: %d values for %d rows of width %d", len(data), rows, dim)
	}
	for i := range rows {
		if normalized == nil || !normalized[i] {
			Normalize(data[i*dim : (i+1)*dim])
		}
	}
	m := blas32.General{Rows: rows, Cols: dim, Stride: dim}
	whole := m
	whole.Data = data
	return newMatrix(m, []slab{{0, whole}}, nil), nil
}

// newMatrix is a matrix of m's shape, its rows in slabs (or, with blocks,
// kept by column), with its pool of score vectors.
func newMatrix(m blas32.General, slabs []slab, blocks []block) *Matrix {
	m.Data = nil
	mx := &Matrix{m: m, slabs: slabs, blocks: blocks}
	if blocks != nil {
		mx.colEntries = countEntries(blocks, m.Cols)
	}
	mx.scratch.New = func() any {
		s := make([]float32, m.Rows)
		return &s
	}
	return mx
}

// derive is a copy of mx sharing its values and pool, for a With method to
// add what it makes: whatever mx holds, the copy holds too.
func (mx *Matrix) derive() *Matrix {
	q := &Matrix{m: mx.m, slabs: mx.slabs, blocks: mx.blocks, colEntries: mx.colEntries, cols: mx.cols, codes: mx.codes, sketch: mx.sketch, base: mx.base, of: mx.of}
	q.scratch.New = mx.scratch.New
	return q
}

// Rows is the number of tools; Dim the embedding width.
func (mx *Matrix) Rows() int { return mx.m.Rows }

// Dim is the embedding width.
func (mx *Matrix) Dim() int { return mx.m.Cols }

// Bytes is the memory held by the vectors themselves: 4 bytes a dimension,
// twice with WithColumns, plus binary codes; a sketch's codes and centre.
func (mx *Matrix) Bytes() int64 {
	b := mx.rowBytes() + int64(cap(mx.cols))*4 + mx.columnBytes() + int64(len(mx.colEntries))*8
	if mx.codes != nil {
		b += int64(len(mx.codes.bits)) * 8
	}
	if mx.sketch != nil {
		b += int64(len(mx.sketch.mean)+len(mx.sketch.norms)+len(mx.sketch.lift)) * 4
	}
	return b + int64(len(mx.of))*4
}

// Row returns row i. The slice aliases the matrix and must not be
// modified; a matrix kept by column returns a copy.
func (mx *Matrix) Row(i int) []float32 {
	if mx.sketch != nil {
		return nil
	}
	if mx.of != nil {
		return mx.base.Row(int(mx.of[i]))
	}
	if mx.blocks != nil {
		return mx.columnRow(i)
	}
	return slabRow(mx.slabs, i)
}

// Vectors returns every row, in order, aliasing the matrix like Row (or,
// from a matrix kept by column, copied into one buffer): what the linter
// takes, which compares every pair of rows.
func (mx *Matrix) Vectors() [][]float32 {
	if mx.Sketched() {
		return nil
	}
	out := make([][]float32, 0, mx.m.Rows)
	var copied []float32 // All reuses its rows of a matrix kept by column
	if mx.blocks != nil {
		copied = make([]float32, 0, mx.m.Rows*mx.m.Cols)
	}
	for _, row := range mx.All() {
		if copied != nil {
			at := len(copied)
			copied = append(copied, row...)
			row = copied[at:len(copied):len(copied)]
		}
		out = append(out, row)
	}
	return out
}

// All yields each row in order, as Row gives it, without the copy of
// every row Vectors makes of a matrix kept by column: such a matrix is
// made dense a block at a time, in a buffer the next block reuses, so a
// row is valid only until the yield returns. A sketch yields none.
// (toolsearch index wrote 100,000 local rows from a 391 MiB copy.)
func (mx *Matrix) All() iter.Seq2[int, []float32] {
	return func(yield func(int, []float32) bool) {
		if mx.Sketched() {
			return
		}
		if mx.blocks == nil {
			for i := range mx.m.Rows {
				if !yield(i, mx.Row(i)) {
					return
				}
			}
			return
		}
		dim := mx.m.Cols
		buf := make([]float32, blockRows*dim)
		for k := range mx.blocks {
			b := &mx.blocks[k]
			dense := buf[:b.n*dim]
			clear(dense)
			b.rowsInto(dim, dense)
			for r := range b.n {
				if !yield(b.first+r, dense[r*dim:(r+1)*dim:(r+1)*dim]) {
					return
				}
			}
		}
	}
}

// TopK returns the k highest scores, best first, ties in row order. It
// keeps a k-sized min-heap of the best so far (typed, so nothing is boxed
// per element) instead of sorting all N scores; the heap is built once it
// is full, and the k survivors are sorted at the end, so when k covers
// every score (small catalogs, hybrid candidate ranks) it is one sort.
func TopK(scores []float32, k int, keep func(row int) bool) []Match {
	return TopKInto(nil, scores, k, keep)
}

// TopKInto is TopK answering in buf when it has room: a caller that
// selects per query reuses one buffer instead of allocating each time.
func TopKInto(buf []Match, scores []float32, k int, keep func(row int) bool) []Match {
	if k <= 0 {
		return buf[:0]
	}
	h := buf[:0]
	if n := min(k, len(scores)); cap(h) < n {
		h = make([]Match, 0, n)
	}
	if k <= insertionK {
		return topKByInsertion(h, scores, k, keep)
	}
	i := 0
	for ; i < len(scores) && len(h) < k; i++ {
		if keep == nil || keep(i) {
			h = append(h, Match{i, scores[i]})
		}
	}
	if i < len(scores) {
		for j := len(h)/2 - 1; j >= 0; j-- {
			down(h, j)
		}
		for ; i < len(scores); i++ {
			if s := scores[i]; s > h[0].Score && (keep == nil || keep(i)) { // a tie never displaces the earlier row
				h[0] = Match{i, s}
				down(h, 0)
			}
		}
	}
	sortMatches(h)
	return h
}

// insertionK is the largest k that TopK keeps as a sorted list, each
// better score shifted into place, instead of a heap sorted at the end: a
// search's top ten over a small catalog's candidates, which come in row
// order and often nearly sorted, took 1.1 µs through the heap, most of
// it sifting and the final sort.
const insertionK = 16

// topKByInsertion keeps the best k in h (empty, with room for them),
// shifting each better score into place in one pass (no call to move a
// few elements).
func topKByInsertion(h []Match, scores []float32, k int, keep func(row int) bool) []Match {
	for i, s := range scores {
		if keep != nil && !keep(i) {
			continue
		}
		n := len(h)
		if n == k {
			if !(s > h[k-1].Score) { // a tie never displaces the earlier row
				continue
			}
			n-- // the worst makes room
		} else {
			h = h[:n+1]
		}
		// After every entry as good: they are earlier rows.
		for n > 0 && h[n-1].Score < s {
			h[n] = h[n-1]
			n--
		}
		h[n] = Match{i, s}
	}
	return h
}

// sortMatches orders ms best first, ties in row order.
func sortMatches(ms []Match) {
	slices.SortFunc(ms, func(a, b Match) int {
		if a.Score != b.Score {
			if a.Score > b.Score {
				return -1
			}
			return 1
		}
		return a.Row - b.Row
	})
}

// worse orders the heap: the root is the worst of the best k. Among equal
// scores the later row is worse, so ties resolve to row order.
func worse(a, b Match) bool {
	if a.Score != b.Score {
		return a.Score < b.Score
	}
	return a.Row > b.Row
}

func down(h []Match, i int) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && worse(h[r], h[l]) {
			m = r
		}
		if !worse(h[m], h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// ScoresInto writes q's cosine with every row into dst, which must have
// Rows elements; q must be unit length.
func (mx *Matrix) ScoresInto(q, dst []float32) error {
	if len(q) != mx.m.Cols {
		return fmt.Errorf("%w: %d, want %d", ErrDimension, len(q), mx.m.Cols)
	}
	if mx.sketch != nil {
		mx.sketchScores(Query{Dense: q}, dst)
		return nil
	}
	if mx.of != nil {
		mx.subsetScores(Query{Dense: q}, dst)
		return nil
	}
	if mx.blocks != nil {
		mx.columnScores(q, dst)
		return nil
	}
	x := blas32.Vector{N: len(q), Inc: 1, Data: q}
	for _, s := range mx.slabs {
		blas32.Gemv(blas.NoTrans, 1, s.m, x, 0, blas32.Vector{N: s.m.Rows, Inc: 1, Data: dst[s.first : s.first+s.m.Rows]})
	}
	return nil
}
