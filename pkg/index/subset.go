package index

import (
	"fmt"

	"gonum.org/v1/gonum/blas/blas32"
)

// Subset returns a matrix of mx's rows rows, in that order, that holds
// no copy of them: each row is read from mx, by its number. An API key
// that sees only some tools searches such a view of the whole index; a
// copy of its rows took as many bytes again for every key (twelve keys
// each seeing 60 % of 10,000 tools at D = 1,536: 440 MiB). A row's score
// is the same dot product, bit for bit, that Gemv over a copy gives
// (TestSubsetScoresAsACopy). A search of a large subset scores the whole
// matrix and picks its rows' scores out, about 1.7 times a copy's time at
// 60 % of the rows (BenchmarkSubset). A subset of a sketch reads its
// codes, and its scores are the sketch's estimates. A matrix kept by
// column has no rows to lend: an error.
func (mx *Matrix) Subset(rows []int) (*Matrix, error) {
	if mx.blocks != nil {
		return nil, fmt.Errorf("index: a subset of a matrix kept by column")
	}
	base, of := mx, make([]int32, len(rows))
	for i, r := range rows {
		if r < 0 || r >= mx.m.Rows {
			return nil, fmt.Errorf("index: subset row %d is row %d, of a matrix of %d", i, r, mx.m.Rows)
		}
		of[i] = int32(r)
	}
	if mx.of != nil { // a subset of a subset reads the whole one
		base = mx.base
		for i, r := range of {
			of[i] = mx.of[r]
		}
	}
	s := newMatrix(blas32.General{Rows: len(rows), Cols: mx.m.Cols, Stride: mx.m.Cols}, nil, nil)
	s.base, s.of = base, of
	return s, nil
}

// subsetScores writes q's product with each of the subset's rows into dst.
// A dense query is scored against every row of the whole matrix, and the
// subset's scores picked out, when the subset is more than two fifths of
// it: one row's dot product alone took about 2.5 times what Gemv takes a
// row (BenchmarkSubset). Gemv's scores are each row's dot product too.
// A sketch's codes are scored whole too: its estimate of one row reads
// the whole query again.
func (mx *Matrix) subsetScores(q Query, dst []float32) {
	if mx.scansWhole(q) {
		sp := mx.base.scratch.Get().(*[]float32)
		defer mx.base.scratch.Put(sp)
		all := *sp
		_ = mx.base.Scores(q, all) // the width was checked against the same
		for i, r := range mx.of {
			dst[i] = all[r]
		}
		return
	}
	for i, r := range mx.of {
		row := mx.base.Row(int(r))
		if q.Dense != nil {
			dst[i] = blas32.Dot(vec(row), vec(q.Dense))
			continue
		}
		var s float32
		for k, j := range q.Sparse.Idx {
			s += q.Sparse.Val[k] * row[j]
		}
		dst[i] = s
	}
}

// scansWhole reports whether the subset scores q against every row of
// its base and picks its own out (subsetScores): for a sketch's codes,
// and for a dense query when the subset is more than two fifths of it.
func (mx *Matrix) scansWhole(q Query) bool {
	return mx.base.sketch != nil || q.Dense != nil && 5*len(mx.of) > 2*mx.base.m.Rows
}

// readsRowsOf reports whether mx is a subset of whole's rows.
func (mx *Matrix) readsRowsOf(whole *Matrix) bool { return mx.of != nil && mx.base == whole }

// rowList is the subset's rows of its base.
func (mx *Matrix) rowList() []int {
	out := make([]int, len(mx.of))
	for i, r := range mx.of {
		out[i] = int(r)
	}
	return out
}
