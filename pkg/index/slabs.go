package index

import (
	"fmt"

	"gonum.org/v1/gonum/blas/blas32"

	"github.com/toolsearch/toolsearch/pkg/internal/prefault"
)

// slab is a run of a matrix's rows kept in an allocation of its own,
// starting at row first. A Draft makes matrices of slabs so that the next
// build can take the runs it did not change, shared, instead of copying
// every row into a second block beside the index serving.
type slab struct {
	first int
	m     blas32.General
}

// slabBytes is about the size of a slab a Draft writes: what one changed
// row costs a rebuild, since the rows beside it in its slab are copied
// with it. Smaller slabs cost searches more than their Gemv calls: at
// 100,000 rows of 1,536, slabs of 256 KiB made a search 1.15 times as
// long as one block, 1 MiB 1.06 times, 2 MiB within noise of it
// (BenchmarkSlabs, BENCHMARKS.md step 24).
const slabBytes = 2 << 20

// slabRows is how many rows of width dim a new slab holds.
func slabRows(dim int) int { return max(1, slabBytes/(4*max(1, dim))) }

// slabAt is the index of the slab of slabs (in row order, the first
// starting at row 0) that holds row i.
func slabAt(slabs []slab, i int) int {
	lo, hi := 0, len(slabs) // the slab is in [lo, hi)
	for hi-lo > 1 {
		if mid := int(uint(lo+hi) >> 1); slabs[mid].first <= i {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// slabRow is row i of slabs; it aliases the slab.
func slabRow(slabs []slab, i int) []float32 { return slabs[slabAt(slabs, i)].row(i) }

// row is the matrix's row i, which s holds; it aliases s.
func (s *slab) row(i int) []float32 {
	off := (i - s.first) * s.m.Stride
	return s.m.Data[off : off+s.m.Cols : off+s.m.Cols]
}

// allocate gives a draft's slab its rows, resident at once, unless it has
// them (Draft.Row).
func (s *slab) allocate() {
	if s.m.Data == nil {
		s.m.Data = prefault.Make[float32](s.m.Rows * s.m.Cols)
	}
}

// Draft is a matrix kept by row being made: rows taken from a matrix
// built before, and rows its caller writes (Row) before Matrix.
type Draft struct {
	dim   int
	src   []int
	slabs []slab
}

// NewDraft lays out a matrix of len(src) rows of width dim. Row i is
// from's row src[i] when src[i] >= 0, a unit row already, and is the
// caller's to write (Row) when src[i] < 0; Matrix normalises those. A
// slab of from whose every row comes, in order, to consecutive rows of the
// draft is shared with from, not copied: an index rebuilt after a few
// texts changed holds the rest of its vectors once, with the index
// serving. Other rows go into new slabs of about slabBytes. A slab of
// under half that many rows is copied rather than shared, so that a
// matrix rebuilt many times is not cut into ever smaller slabs: at most
// about four for each slabRows rows. from may be nil when no src is >= 0.
// src is the draft's until Matrix.
func NewDraft(from *Matrix, src []int, dim int) (*Draft, error) {
	return newDraft(from, src, dim, slabRows(dim))
}

// NewBlankDraft lays out a matrix of rows rows of width dim, every one
// the caller's to write (Row): a first build's, or a snapshot file's.
func NewBlankDraft(rows, dim int) (*Draft, error) {
	return NewDraft(nil, blank(rows), dim)
}

// blank is the sources of n rows none of which comes from a matrix.
func blank(n int) []int {
	src := make([]int, n)
	for i := range src {
		src[i] = -1
	}
	return src
}

// newDraft is NewDraft writing slabs of per rows.
func newDraft(from *Matrix, src []int, dim, per int) (*Draft, error) {
	if len(src) == 0 || dim <= 0 || per <= 0 {
		return nil, fmt.Errorf("index: a draft of %d rows of width %d", len(src), dim)
	}
	var old []slab
	if from != nil {
		if from.m.Cols != dim {
			return nil, fmt.Errorf("%w: draft of width %d from rows of width %d", ErrDimension, dim, from.m.Cols)
		}
		old = from.slabs // none when kept by column: its rows are copied
	}
	rows := 0
	if from != nil {
		rows = from.m.Rows
	}
	for i, r := range src {
		if r >= rows {
			return nil, fmt.Errorf("index: draft row %d from row %d, of a matrix of %d", i, r, rows)
		}
	}
	d := &Draft{dim: dim, src: src}
	run := -1 // the first row of a run that no slab of from covers
	for i := 0; i < len(src); {
		if k := sharable(old, src, i, per); k >= 0 {
			d.alloc(from, run, i, per)
			run = -1
			d.slabs = append(d.slabs, slab{i, old[k].m})
			i += old[k].m.Rows
			continue
		}
		if run < 0 {
			run = i
		}
		i++
	}
	d.alloc(from, run, len(src), per)
	return d, nil
}

// sharable is the index of the slab of old that rows i... of the draft
// take whole, or -1.
func sharable(old []slab, src []int, i, per int) int {
	r := src[i]
	if r < 0 || len(old) == 0 {
		return -1
	}
	k := slabAt(old, r)
	n := old[k].m.Rows
	if old[k].first != r || 2*n < per || i+n > len(src) {
		return -1
	}
	for t := 1; t < n; t++ {
		if src[i+t] != r+t {
			return -1
		}
	}
	return k
}

// alloc gives rows [first, end) new slabs of up to per rows (none when
// first < 0), with the rows that have a source in from copied.
func (d *Draft) alloc(from *Matrix, first, end, per int) {
	if first < 0 {
		return
	}
	for a := first; a < end; a += per {
		n := min(per, end-a)
		s := slab{a, blas32.General{Rows: n, Cols: d.dim, Stride: d.dim}}
		for r := range n {
			if j := d.src[a+r]; j >= 0 {
				s.allocate()
				copy(s.row(a+r), from.Row(j))
			}
		}
		d.slabs = append(d.slabs, s)
	}
}

// Row is row i of the draft, to write when its source was < 0. A slab
// none of whose rows is copied is allocated when one of its rows is first
// asked for, not with the draft: a provider answers a rebuild batch by
// batch, and the texts of those answered are let go as their rows are
// written, so the texts and the new rows are not all held at once. So Row
// writes the draft: its calls must not overlap.
func (d *Draft) Row(i int) []float32 {
	s := &d.slabs[slabAt(d.slabs, i)]
	s.allocate()
	return s.row(i)
}

// Dim is the draft's width.
func (d *Draft) Dim() int { return d.dim }

// Matrix normalises the rows the caller wrote and returns the matrix; the
// draft must not be used after.
func (d *Draft) Matrix() *Matrix {
	for i, j := range d.src {
		if j < 0 {
			Normalize(d.Row(i))
		}
	}
	return newMatrix(blas32.General{Rows: len(d.src), Cols: d.dim, Stride: d.dim}, d.slabs, nil)
}
