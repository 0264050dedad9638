package index

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

// A sketch estimates dense cosines from its codes: close to the exact
// ones on average, and close enough that a query near a row finds it
// first.
func TestSketchEstimates(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const n, d = 500, 768
	vecs := randomRows(r, n, d, false)
	for _, v := range vecs {
		Normalize(v)
	}
	mx := draftOf(t, vecs, 0)
	sk := mx.Sketch()
	exact, est := make([]float32, n), make([]float32, n)
	var errSum float64
	for trial := range 20 {
		// A query that is row i plus as much noise again: cosine about
		// 0.7 with row i, about 0 with the others.
		i := r.IntN(n)
		q := make([]float32, d)
		for j := range q {
			q[j] = vecs[i][j] + float32(r.NormFloat64())/float32(math.Sqrt(d))
		}
		Normalize(q)
		if err := mx.Scores(Query{Dense: q}, exact); err != nil {
			t.Fatal(err)
		}
		if err := sk.Scores(Query{Dense: q}, est); err != nil {
			t.Fatal(err)
		}
		for row := range n {
			errSum += math.Abs(float64(est[row] - exact[row]))
		}
		top, err := sk.Candidates(Query{Dense: q}, 3, nil)
		if err != nil {
			t.Fatal(err)
		}
		if top[0].Row != i {
			t.Errorf("trial %d: the sketch ranks row %d first, not the query's own row %d (exact %.3f, estimated %.3f)", trial, top[0].Row, i, exact[i], est[i])
		}
	}
	// Over 768 columns the share of opposite signs has a standard error
	// of about 0.018, which moves a cosine near 0 by about 0.06.
	if mean := errSum / (20 * n); mean > 0.06 {
		t.Errorf("mean |estimate - exact| = %.3f, want under 0.06", mean)
	}
}

// What a sketch holds, says and refuses, against the matrix it came from.
func TestSketchShape(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	const n, d = 70, 130 // a width that does not fill its last word
	vecs := randomRows(r, n, d, false)
	mx := draftOf(t, vecs, 0)
	sk := mx.Sketch()
	cols := NewColumns(n, d)
	for i, v := range vecs {
		cols.SetRows(i, append([]float32(nil), v...), touchedOf(v, d, nil))
	}
	byCol, err := cols.Matrix()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		ok   bool
	}{
		{"shape", sk.Rows() == n && sk.Dim() == d},
		{"quantization", sk.Quantization() == QuantSketch && mx.Quantization() == QuantNone},
		{"sketched", sk.Sketched() && !mx.Sketched()},
		{"bytes", sk.Bytes() == mx.SketchBytes() && sk.Bytes() == int64(2*n*3*8+(2*n+d)*4)},
		{"no rows", sk.Row(3) == nil && sk.Vectors() == nil && !hasRows(sk)},
		{"sketch of a sketch", sk.Sketch() == sk},
		{"no binary or columns added", sk.WithBinary(10) == sk && sk.WithColumns() == sk},
		{"a binary matrix's", mx.WithBinary(10).Sketch().Bytes() == sk.Bytes()},
		{"none by column", byCol.Sketch() == nil && byCol.SketchBytes() == 0},
	}
	for _, tt := range tests {
		if !tt.ok {
			t.Errorf("%s: does not hold", tt.name)
		}
	}
	if _, err := sk.Candidates(Query{Dense: make([]float32, d+1)}, 3, nil); !errors.Is(err, ErrDimension) {
		t.Errorf("a query of the wrong width: %v, want ErrDimension", err)
	}
	// A query of no nonzero column in common with any row is no evidence.
	zero := make([]float32, n)
	if err := sk.Scores(Query{Sparse: Sparse{}}, zero); err != nil {
		t.Fatal(err)
	}
	for row, s := range zero {
		if s != 0 {
			t.Fatalf("row %d: an empty query scores %v, want 0", row, s)
		}
	}
	keep := func(row int) bool { return row%2 == 1 }
	got, err := sk.Candidates(Query{Dense: mx.Row(10)}, 5, keep)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range got {
		if !keep(m.Row) {
			t.Errorf("row %d returned, which keep refuses", m.Row)
		}
	}
}

// A sketch's estimate is a cosine: 1 for the same signs, -1 for the
// opposite, 0 for orthogonal halves or nothing in common.
func TestSketchCosine(t *testing.T) {
	tests := []struct {
		both, differ int
		want         float32
	}{
		{0, 0, 0},
		{64, 0, 1},
		{64, 64, -1},
		{64, 32, 0},
	}
	for _, tt := range tests {
		if got := sketchCosine(tt.both, tt.differ); math.Abs(float64(got-tt.want)) > 1e-6 {
			t.Errorf("sketchCosine(%d, %d) = %v, want %v", tt.both, tt.differ, got, tt.want)
		}
	}
}

// Vectors that share a direction (as a model's embeddings do) agree in
// most signs whatever they say; a sketch takes its codes about their mean,
// so that a query near a row finds it first more often than the rows' own
// codes would (a binary index's first pass, whose ranking is what the
// uncentred estimate's would be), and estimates the cosine, mean included.
func TestSketchCentred(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const n, d, trials = 5000, 768, 50
	mean := make([]float64, d)
	for j := range mean {
		mean[j] = 2 * r.NormFloat64()
	}
	vecs := make([][]float32, n)
	for i := range vecs {
		v := make([]float32, d)
		for j := range v {
			v[j] = float32(mean[j] + r.NormFloat64())
		}
		Normalize(v)
		vecs[i] = v
	}
	mx := draftOf(t, vecs, 0)
	sk := mx.Sketch()
	signs := mx.WithBinary(1)
	agreement := make([]float32, n)
	var first, signsFirst int
	var off float64
	for range trials {
		i := r.IntN(n)
		q := make([]float32, d)
		for j := range q {
			q[j] = vecs[i][j] + float32(r.NormFloat64()*1.5/math.Sqrt(d))
		}
		Normalize(q)
		exact, err := mx.Candidates(Query{Dense: q}, 1, nil)
		if err != nil {
			t.Fatal(err)
		}
		est, err := sk.Candidates(Query{Dense: q}, 1, nil)
		if err != nil {
			t.Fatal(err)
		}
		if est[0].Row == exact[0].Row {
			first++
		}
		signs.estimate(Query{Dense: q}, agreement)
		if TopK(agreement, 1, nil)[0].Row == exact[0].Row {
			signsFirst++
		}
		off += math.Abs(float64(sk.Dot(Query{Dense: q}, exact[0].Row) - exact[0].Score))
	}
	t.Logf("the nearest row first in %d of %d trials; by the rows' own codes, %d", first, trials, signsFirst)
	if 2*first < 3*signsFirst {
		t.Errorf("the nearest row first in %d of %d trials, by the rows' own codes %d: want half as many again", first, trials, signsFirst)
	}
	if off /= trials; off > 0.05 {
		t.Errorf("the nearest row's estimate is %.3f from its cosine on average, want under 0.05", off)
	}
}

// hasRows reports whether mx.All yields a row.
func hasRows(mx *Matrix) bool {
	for range mx.All() {
		return true
	}
	return false
}
