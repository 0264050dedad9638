package index

import (
	"fmt"
	"math"
	"math/bits"

	"gonum.org/v1/gonum/blas/blas32"
)

// Quantization names an index's first pass.
const (
	// QuantNone ranks by exact float32 dot products (the default).
	QuantNone = "none"
	// QuantBinary ranks rows first by a two-bit code per column (nonzero,
	// negative), compared with AND, XOR and popcount, then rescores the
	// best few exactly against the float32 rows.
	QuantBinary = "binary"
)

// DefaultRescore is how many rows, at least, the binary first pass hands
// to exact rescoring; more when a caller asks for more.
const DefaultRescore = 200

// binaryCodes holds two bit planes per row: which columns are nonzero and
// which are negative. A dense embedding is nonzero everywhere, so its
// planes reduce to sign bits; a sparse local embedding keeps its pattern.
type binaryCodes struct {
	words   int      // uint64 words per plane
	bits    []uint64 // row r: nonzero plane at 2*r*words, negative plane after it
	rescore int
}

// Query is a unit-length query, dense or sparse (Dense nil).
type Query struct {
	Dense  []float32
	Sparse Sparse
}

// WithBinary returns a matrix that shares mx's rows and adds binary codes,
// so that Candidates ranks by codes first and rescores at least rescore
// rows exactly (DefaultRescore when rescore <= 0). The codes take 1/16 of
// the rows' memory; the float32 rows stay, for rescoring.
//
// A matrix kept by column is returned as it is: a query reads only its
// nonzeros' columns there, less than the codes of every row, and each
// rescored row is a search in every column the query has. At 10,000
// generated tools, binary codes made the local embedder's short semantic
// searches 4.3 times slower and its hybrid ones 3.6 (BENCHMARKS.md),
// for more memory and approximate rankings.
func (mx *Matrix) WithBinary(rescore int) *Matrix {
	if mx.blocks != nil || mx.Sketched() {
		return mx
	}
	if rescore <= 0 {
		rescore = DefaultRescore
	}
	rows, cols := mx.m.Rows, mx.m.Cols
	c := &binaryCodes{words: (cols + 63) / 64, rescore: rescore}
	c.bits = make([]uint64, 2*rows*c.words)
	for r := range rows {
		nz, neg := c.planes(r)
		setPlanes(mx.Row(r), nz, neg)
	}
	q := mx.derive()
	q.codes = c
	return q
}

func (c *binaryCodes) planes(r int) (nz, neg []uint64) {
	p := c.bits[2*r*c.words : 2*(r+1)*c.words]
	return p[:c.words], p[c.words:]
}

// setPlanes records a row's values v in its planes. It reads each value's
// bits rather than comparing it, a word of 64 values at a time: a dense
// row's signs are random, and a branch on each was mispredicted half the
// time (BENCHMARKS.md, "The serving index kept as its sign codes").
func setPlanes(v []float32, nz, neg []uint64) {
	for w := 0; w*64 < len(v); w++ {
		var z, n uint64
		for k, x := range v[w*64 : min(len(v), (w+1)*64)] {
			b := math.Float32bits(x)
			// 1 when the magnitude is not zero (−0 is zero), else 0.
			nonzero := uint64((b&0x7fffffff + 0x7fffffff) >> 31)
			z |= nonzero << k
			n |= uint64(b>>31) & nonzero << k
		}
		nz[w] |= z
		neg[w] |= n
	}
}

// Quantization reports the matrix's first pass: QuantNone, QuantBinary,
// or QuantSketch for codes alone.
func (mx *Matrix) Quantization() string {
	if mx.Sketched() {
		return QuantSketch
	}
	if mx.codes != nil {
		return QuantBinary
	}
	return QuantNone
}

// Scores writes q's exact cosine with every row into dst (Rows elements);
// a sketch's are estimates.
func (mx *Matrix) Scores(q Query, dst []float32) error {
	if q.Dense != nil {
		return mx.ScoresInto(q.Dense, dst)
	}
	return mx.SparseScoresInto(q.Sparse, dst)
}

// Dot is q's exact cosine with one row (a sketch's estimate).
func (mx *Matrix) Dot(q Query, row int) float32 {
	if mx.sketch != nil {
		return mx.sketchDot(q, row)
	}
	if mx.of != nil {
		return mx.base.Dot(q, int(mx.of[row]))
	}
	if mx.blocks != nil {
		return mx.columnDot(q, row)
	}
	r := mx.Row(row)
	if q.Dense != nil {
		return blas32.Dot(blas32.Vector{N: len(r), Inc: 1, Data: r}, blas32.Vector{N: len(q.Dense), Inc: 1, Data: q.Dense})
	}
	var s float32
	for k, j := range q.Sparse.Idx {
		s += q.Sparse.Val[k] * r[j]
	}
	return s
}

// Candidates returns the n rows kept by keep with the highest cosine to q,
// best first, ties in row order, with exact scores. An exact matrix scores
// every row; a binary one scores every row's codes, and only the best
// max(n, rescore) of those exactly, so it can miss a row whose codes
// undersell it: that is its recall cost. A sketch ranks by its
// estimates alone.
func (mx *Matrix) Candidates(q Query, n int, keep func(row int) bool) ([]Match, error) {
	if err := mx.checkQuery(q); err != nil {
		return nil, err
	}
	sp := mx.scratch.Get().(*[]float32)
	defer mx.scratch.Put(sp)
	scores := *sp
	if mx.codes == nil || mx.sketch != nil {
		if err := mx.Scores(q, scores); err != nil {
			return nil, err
		}
		return TopK(scores, n, keep), nil
	}
	mx.estimate(q, scores)
	first := TopK(scores, max(n, mx.codes.rescore), keep)
	for i := range first {
		first[i].Score = mx.Dot(q, first[i].Row)
	}
	sortMatches(first)
	return first[:min(n, len(first))], nil
}

func (mx *Matrix) checkQuery(q Query) error {
	if q.Dense != nil {
		if len(q.Dense) != mx.m.Cols {
			return fmt.Errorf("%w: %d, want %d", ErrDimension, len(q.Dense), mx.m.Cols)
		}
		return nil
	}
	if len(q.Sparse.Idx) != len(q.Sparse.Val) {
		return fmt.Errorf("%w: sparse query has %d indices and %d values", ErrDimension, len(q.Sparse.Idx), len(q.Sparse.Val))
	}
	for _, j := range q.Sparse.Idx {
		if j < 0 || int(j) >= mx.m.Cols {
			return fmt.Errorf("%w: sparse query column %d, want under %d", ErrDimension, j, mx.m.Cols)
		}
	}
	return nil
}

// estimate writes each row's agreement with q's codes into dst: over the
// columns nonzero in both, those of equal sign minus those of opposite
// sign (for sign-only codes, cols - 2·Hamming distance). That is two
// popcounts per 64 columns a row. A sparse query is reduced to codes
// like a dense one: weighting its columns by value, one bit test per
// column, measured slower and no better on the shared eval sets.
func (mx *Matrix) estimate(q Query, dst []float32) {
	c := mx.codes
	words := c.words
	qnz, qneg, live := c.query(q)
	for r := range mx.m.Rows {
		p := c.bits[2*r*words : 2*(r+1)*words]
		both, differ := agree(qnz, qneg, p[:words], p[words:], live)
		dst[r] = float32(both - 2*differ)
	}
}

// agree counts the columns among live's words nonzero in both a query's
// planes and a row's, and how many of those differ in sign.
func agree(qnz, qneg, rnz, rneg []uint64, live []int) (both, differ int) {
	for _, w := range live {
		z := qnz[w] & rnz[w]
		both += bits.OnesCount64(z)
		differ += bits.OnesCount64(z & (qneg[w] ^ rneg[w]))
	}
	return both, differ
}

// query is q's codes, and the words where it has a nonzero column: the
// others add nothing to any row's agreement (none for a dense query, most
// for a sparse one).
func (c *binaryCodes) query(q Query) (qnz, qneg []uint64, live []int) {
	words := c.words
	qp := make([]uint64, 2*words)
	qnz, qneg = qp[:words], qp[words:]
	if q.Dense != nil {
		setPlanes(q.Dense, qnz, qneg)
	} else {
		for k, j := range q.Sparse.Idx {
			if v := q.Sparse.Val[k]; v != 0 {
				qnz[j/64] |= 1 << (j % 64)
				if v < 0 {
					qneg[j/64] |= 1 << (j % 64)
				}
			}
		}
	}
	live = make([]int, 0, words)
	for w, x := range qnz {
		if x != 0 {
			live = append(live, w)
		}
	}
	return qnz, qneg, live
}
