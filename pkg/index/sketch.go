package index

import (
	"math"

	"gonum.org/v1/gonum/blas/blas32"
)

// QuantSketch is the quantization of a matrix that holds its rows' binary
// codes alone (Sketch): every score is estimated from them.
const QuantSketch = "sketch"

// centre is what a sketch's codes are taken about: the rows' mean, each
// row's length less it, and each row's product with it less it.
type centre struct {
	mean  []float32
	norms []float32
	lift  []float32
}

// Sketch returns a matrix of mx's shape that keeps its rows' sign codes
// and nothing else of their values, for a rebuild whose memory cannot
// hold the exact rows beside the new ones: at a sixteenth of the rows'
// bytes it still ranks by meaning, where letting the index go would leave
// keywords alone. It has no rows to return (Row and Vectors give nil),
// and is never rescored.
//
// Its scores estimate the cosine. Over the columns nonzero in both a
// query and a row, the share of opposite signs estimates the angle
// between two vectors over π (exactly, in expectation, for random
// hyperplanes; here they are the axes). Embeddings share a direction
// (an unrelated pair of a model's texts can have a cosine of 0.7), which
// makes most signs agree whatever the texts: so the codes are of each
// row and the query less the rows' mean, and q·row is estimated as
// |q − mean| · |row − mean| · cos(π · share) + mean·(row − mean) +
// q·mean, the last two exact. On random vectors sharing a mean twice
// their spread, the nearest row came first in 46 of 50 trials so,
// against 19 by their own signs (TestSketchCentred).
//
// It is for dense vectors: two sparse ones share few columns, and the
// signs of those say little. A matrix kept by column (the local
// embedder's vectors at scale) has no sketch: nil.
func (mx *Matrix) Sketch() *Matrix {
	if mx.blocks != nil {
		return nil
	}
	if mx.Sketched() {
		return mx
	}
	rows, dim := mx.m.Rows, mx.m.Cols
	ctr := &centre{mean: make([]float32, dim), norms: make([]float32, rows), lift: make([]float32, rows)}
	for r := range rows {
		blas32.Axpy(1, vec(mx.Row(r)), vec(ctr.mean))
	}
	blas32.Scal(1/float32(max(rows, 1)), vec(ctr.mean))
	c := &binaryCodes{words: (dim + 63) / 64}
	c.bits = make([]uint64, 2*rows*c.words)
	less := make([]float32, dim)
	for r := range rows {
		copy(less, mx.Row(r))
		blas32.Axpy(-1, vec(ctr.mean), vec(less))
		ctr.norms[r] = float32(Norm(less))
		ctr.lift[r] = blas32.Dot(vec(ctr.mean), vec(less))
		nz, neg := c.planes(r)
		setPlanes(less, nz, neg)
	}
	s := &Matrix{m: mx.m, codes: c, sketch: ctr}
	s.scratch.New = mx.scratch.New
	return s
}

func vec(v []float32) blas32.Vector { return blas32.Vector{N: len(v), Inc: 1, Data: v} }

// SketchBytes is what Sketch of mx would hold.
func (mx *Matrix) SketchBytes() int64 {
	if mx.blocks != nil {
		return 0
	}
	rows, dim := int64(mx.m.Rows), int64(mx.m.Cols)
	return 2*rows*((dim+63)/64)*8 + (2*rows+dim)*4
}

// Sketched reports whether mx holds codes alone (Sketch), or reads a
// sketch's (Subset of one): its scores are estimates, and it has no rows.
// No matrix is not a sketch.
func (mx *Matrix) Sketched() bool {
	return mx != nil && (mx.sketch != nil || mx.base != nil && mx.base.sketch != nil)
}

// SketchWithin is mx's sketch when whole's is wholeSketch: a subset of
// wholeSketch when mx is a subset of whole (a view's rows read where the
// whole index's codes are, as its rows were), else mx's own Sketch.
func (mx *Matrix) SketchWithin(whole, wholeSketch *Matrix) *Matrix {
	if !mx.readsRowsOf(whole) || wholeSketch == nil || wholeSketch.sketch == nil || wholeSketch.m.Rows != whole.m.Rows {
		return mx.Sketch()
	}
	s, err := wholeSketch.Subset(mx.rowList())
	if err != nil { // cannot be: the rows are whole's
		return mx.Sketch()
	}
	return s
}

// SketchBytesWithin is what SketchWithin(whole, …) of mx would hold.
func (mx *Matrix) SketchBytesWithin(whole *Matrix) int64 {
	if mx.readsRowsOf(whole) {
		return int64(len(mx.of)) * 4
	}
	return mx.SketchBytes()
}

// sketchScores writes q's estimated cosine with every row into dst.
func (mx *Matrix) sketchScores(q Query, dst []float32) {
	sq := mx.sketch.query(q)
	qnz, qneg, live := mx.codes.query(Query{Dense: sq.less})
	for r := range mx.m.Rows {
		dst[r] = mx.sketchRow(qnz, qneg, live, r, sq)
	}
}

// sketchDot is q's estimated cosine with one row.
func (mx *Matrix) sketchDot(q Query, row int) float32 {
	sq := mx.sketch.query(q)
	qnz, qneg, live := mx.codes.query(Query{Dense: sq.less})
	return mx.sketchRow(qnz, qneg, live, row, sq)
}

// sketchQuery is a query as a sketch reads it: less the mean, that
// one's length, and the query's product with the mean.
type sketchQuery struct {
	less       []float32
	norm, lift float32
	evidence   bool // false for a zero query
}

// query centres q: q·row = (q − mean)·(row − mean) + mean·(row − mean) +
// q·mean, and the codes of both centred vectors estimate the first term.
func (c *centre) query(q Query) sketchQuery {
	less := make([]float32, len(c.mean))
	if q.Dense != nil {
		copy(less, q.Dense)
	} else {
		for k, j := range q.Sparse.Idx {
			less[j] = q.Sparse.Val[k]
		}
	}
	if Norm(less) == 0 {
		// No evidence: every product is 0, and so is every estimate.
		return sketchQuery{less: less}
	}
	lift := blas32.Dot(vec(less), vec(c.mean))
	blas32.Axpy(-1, vec(c.mean), vec(less))
	return sketchQuery{less: less, norm: float32(Norm(less)), lift: lift, evidence: true}
}

// sketchRow is row r's estimate for q.
func (mx *Matrix) sketchRow(qnz, qneg []uint64, live []int, r int, q sketchQuery) float32 {
	if !q.evidence {
		return 0
	}
	rnz, rneg := mx.codes.planes(r)
	c := mx.sketch
	return q.norm*c.norms[r]*sketchCosine(agree(qnz, qneg, rnz, rneg, live)) + c.lift[r] + q.lift
}

// sketchCosine is the cosine estimated from both columns nonzero in a
// query and a row, differ of them of opposite signs: none in common is no
// evidence (0), as an exact product of disjoint vectors is.
func sketchCosine(both, differ int) float32 {
	if both == 0 {
		return 0
	}
	return float32(math.Cos(math.Pi * float64(differ) / float64(both)))
}
