package index

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// subsetOf is mx's rows in reverse order, read from mx (Subset).
func subsetOf(tb testing.TB, mx *Matrix, rows int) *Matrix {
	tb.Helper()
	order := make([]int, rows)
	for i := range order {
		order[i] = rows - 1 - i
	}
	s, err := mx.Subset(order)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// A subset scores each of its rows as a copy of those rows does, bit for
// bit, dense and sparse, exact and binary, scoring the whole matrix (a
// large subset) or its own rows (a small one), and holds only their
// numbers.
func TestSubsetScoresAsACopy(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	const n, d = 900, 96
	vecs := randomRows(r, n, d, false)
	mx := draftOf(t, vecs, 64)
	for _, size := range []int{500, 100} {
		rows := r.Perm(n)[:size]
		sub, copied := subsetAndCopy(t, mx, rows)
		dense, sp := queries(d, 20)
		for _, q := range []Query{{Dense: dense}, {Sparse: sp}} {
			for _, pair := range [][2]*Matrix{{sub, copied}, {sub.WithBinary(50), copied.WithBinary(50)}} {
				want, got := make([]float32, len(rows)), make([]float32, len(rows))
				if err := pair[1].Scores(q, want); err != nil {
					t.Fatal(err)
				}
				if err := pair[0].Scores(q, got); err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got, want) {
					t.Fatalf("%d rows, dense=%v binary=%v: the subset's scores differ from the copy's", size, q.Dense != nil, pair[0].codes != nil)
				}
				a, _ := pair[0].Candidates(q, 10, nil)
				b, _ := pair[1].Candidates(q, 10, nil)
				if !slices.Equal(a, b) {
					t.Fatalf("%d rows, dense=%v binary=%v: candidates %v, the copy's %v", size, q.Dense != nil, pair[0].codes != nil, a, b)
				}
			}
		}
	}
	rows := r.Perm(n)[:500]
	sub, copied := subsetAndCopy(t, mx, rows)
	// A subset of the subset reads the whole matrix, by the rows it names.
	inner, err := sub.Subset([]int{3, 1, 4})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(inner.Row(2), mx.Row(rows[4])) || inner.base != mx {
		t.Error("a subset of a subset does not read the whole matrix's rows")
	}
	if got := sub.Bytes(); got != int64(4*len(rows)) {
		t.Errorf("a subset holds %d bytes, want %d", got, 4*len(rows))
	}
	// A large subset's search reads the whole matrix, more than a copy of
	// its rows would; a small one reads its own rows, as a copy does.
	dense, _ := queries(d, 20)
	small, smallCopy := subsetAndCopy(t, mx, rows[:100])
	q := Query{Dense: dense}
	if sub.ExactCost(q) <= copied.ExactCost(q) || small.ExactCost(q) != smallCopy.ExactCost(q) {
		t.Errorf("costs: subset of 500 %v (a copy %v), of 100 %v (a copy %v)", sub.ExactCost(q), copied.ExactCost(q), small.ExactCost(q), smallCopy.ExactCost(q))
	}
	if sub.WithColumns() != sub {
		t.Error("a subset was given columns of its own")
	}
	if sk := sub.Sketch(); sk.Vectors() != nil || sk.Rows() != len(rows) || sk.Bytes() != copied.SketchBytes() {
		t.Error("a subset's sketch")
	}
	for _, tc := range []struct {
		name string
		mx   *Matrix
		rows []int
	}{
		{"a row past the end", mx, []int{0, n}},
		{"a negative row", mx, []int{-1}},
	} {
		if _, err := tc.mx.Subset(tc.rows); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
}

func subsetAndCopy(tb testing.TB, mx *Matrix, rows []int) (sub, copied *Matrix) {
	tb.Helper()
	sub, err := mx.Subset(rows)
	if err != nil {
		tb.Fatal(err)
	}
	d, err := NewDraft(mx, slices.Clone(rows), mx.Dim())
	if err != nil {
		tb.Fatal(err)
	}
	return sub, d.Matrix()
}

// A view's sketch is the whole index's sketch read by the view's rows
// (SketchWithin): the same estimates for those rows, in a handful of
// bytes, and a sketch in every way a caller can ask.
func TestSketchWithin(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	const n, d = 300, 130
	mx := draftOf(t, randomRows(r, n, d, false), 0)
	rows := r.Perm(n)[:80]
	view, err := mx.Subset(rows)
	if err != nil {
		t.Fatal(err)
	}
	whole := mx.Sketch()
	sk := view.SketchWithin(mx, whole)
	if sk.base != whole || sk.Bytes() != int64(4*len(rows)) || view.SketchBytesWithin(mx) != sk.Bytes() {
		t.Fatalf("the view's sketch holds %d bytes, reads %p, want a subset of the whole's", sk.Bytes(), sk.base)
	}
	if !sk.Sketched() || sk.Quantization() != QuantSketch || sk.Vectors() != nil || sk.Sketch() != sk || sk.WithBinary(5) != sk {
		t.Error("the view's sketch does not say it is one")
	}
	dense, sp := queries(d, 20)
	for _, q := range []Query{{Dense: dense}, {Sparse: sp}} {
		all, got := make([]float32, n), make([]float32, len(rows))
		if err := whole.Scores(q, all); err != nil {
			t.Fatal(err)
		}
		if err := sk.Scores(q, got); err != nil {
			t.Fatal(err)
		}
		for i, row := range rows {
			if got[i] != all[row] || sk.Dot(q, i) != got[i] {
				t.Fatalf("dense=%v, row %d: %v (Dot %v), the whole sketch's %v", q.Dense != nil, i, got[i], sk.Dot(q, i), all[row])
			}
		}
	}
	// Of a matrix that is not a subset of the whole, its own sketch.
	other := draftOf(t, randomRows(r, 10, d, false), 0)
	if own := other.SketchWithin(mx, whole); own.base != nil || own.Bytes() != other.SketchBytes() || other.SketchBytesWithin(mx) != own.Bytes() {
		t.Error("a matrix of its own rows was not sketched on its own")
	}
}
