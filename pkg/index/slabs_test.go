package index

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// Tests cut their matrices into slabs of slabPer rows of slabDim, so
// that small matrices have many.
const slabDim, slabPer = 16, 8

// draftOf is vecs made into a matrix by a Draft of no source, as a first
// build makes it, in slabs of per rows (as NewDraft makes them when 0).
func draftOf(tb testing.TB, vecs [][]float32, per int) *Matrix {
	tb.Helper()
	if per == 0 {
		per = slabRows(len(vecs[0]))
	}
	d, err := newDraft(nil, blank(len(vecs)), len(vecs[0]), per)
	if err != nil {
		tb.Fatal(err)
	}
	for i, v := range vecs {
		copy(d.Row(i), v)
	}
	return d.Matrix()
}

// blockOf is vecs normalised into one block (Adopt), as the local
// embedder's matrices are.
func blockOf(tb testing.TB, vecs [][]float32) *Matrix {
	tb.Helper()
	dim := len(vecs[0])
	data := make([]float32, 0, len(vecs)*dim)
	for _, v := range vecs {
		data = append(data, v...)
	}
	mx, err := Adopt(data, len(vecs), dim, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return mx
}

// A matrix of slabs scores, rescores and gives back its rows as one block
// of the same rows does, bit for bit, dense and sparse, exact and binary.
func TestSlabsScoreAsOneBlock(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, rows := range []int{1, 7, 8, 9, 61} {
		for _, sparse := range []bool{false, true} {
			vecs := randomRows(r, rows, slabDim, sparse)
			one := blockOf(t, vecs)
			slabs := draftOf(t, vecs, slabPer)
			if want := (rows + 7) / 8; max(1, len(slabs.slabs)) != want {
				t.Fatalf("%d rows: %d slabs, want %d", rows, len(slabs.slabs), want)
			}
			q := toQuery(randomRows(r, 1, slabDim, sparse)[0], sparse)
			if q.Dense != nil {
				Normalize(q.Dense)
			}
			want, got := make([]float32, rows), make([]float32, rows)
			if err := one.Scores(q, want); err != nil {
				t.Fatal(err)
			}
			if err := slabs.Scores(q, got); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(want, got) {
				t.Errorf("%d rows, sparse %v: scores differ", rows, sparse)
			}
			for i := range rows {
				if !slices.Equal(one.Row(i), slabs.Row(i)) || one.Dot(q, i) != slabs.Dot(q, i) {
					t.Errorf("%d rows, sparse %v: row %d differs", rows, sparse, i)
				}
			}
			a, _ := one.WithBinary(2).Candidates(q, 5, nil)
			b, _ := slabs.WithBinary(2).Candidates(q, 5, nil)
			if !slices.Equal(a, b) {
				t.Errorf("%d rows, sparse %v: binary candidates %v, want %v", rows, sparse, b, a)
			}
			if one.Bytes() != slabs.Bytes() {
				t.Errorf("%d rows: Bytes %d, want %d", rows, slabs.Bytes(), one.Bytes())
			}
		}
	}
}

// TestDraftShares rebuilds a matrix of 64 rows (8 slabs) after edits a
// catalog sees: the new matrix must hold exactly the new rows, and share
// every slab of the old one that the edit left whole.
func TestDraftShares(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	old := randomRows(r, 64, slabDim, false)
	fresh := func() []float32 { return randomRows(r, 1, slabDim, false)[0] }
	seq := func(a, b int) []int {
		var s []int
		for i := a; i < b; i++ {
			s = append(s, i)
		}
		return s
	}
	for _, tc := range []struct {
		name   string
		src    []int // -1: a new row
		shared int
	}{
		{"unchanged", seq(0, 64), 64},
		{"one row changed", slices.Concat(seq(0, 20), []int{-1}, seq(21, 64)), 56},
		{"one row added", slices.Concat(seq(0, 20), []int{-1}, seq(20, 64)), 56},
		{"one row removed", slices.Concat(seq(0, 20), seq(21, 64)), 56},
		{"rows appended", slices.Concat(seq(0, 64), []int{-1, -1, -1}), 64},
		{"halves swapped", slices.Concat(seq(32, 64), seq(0, 32)), 64},
		{"one slab moved by three rows", slices.Concat([]int{-1, -1, -1}, seq(0, 61)), 56},
		{"every row new", slices.Repeat([]int{-1}, 64), 0},
		{"every other row", seq(0, 32), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			from := draftOf(t, old, slabPer)
			d, err := newDraft(from, tc.src, slabDim, slabPer)
			if err != nil {
				t.Fatal(err)
			}
			if tc.name == "every other row" {
				for i := range tc.src {
					tc.src[i] = 2 * i
				}
				d, err = newDraft(from, tc.src, slabDim, slabPer)
				if err != nil {
					t.Fatal(err)
				}
			}
			want := make([][]float32, len(tc.src))
			unit := make([]bool, len(tc.src))
			for i, j := range tc.src {
				if j >= 0 {
					want[i], unit[i] = from.Row(j), true
					continue
				}
				want[i] = fresh()
				copy(d.Row(i), want[i])
			}
			mx := d.Matrix()
			shared := 0
			for i, j := range tc.src {
				if !unit[i] {
					Normalize(want[i])
				}
				if !slices.Equal(mx.Row(i), want[i]) {
					t.Fatalf("row %d differs from a build of the same rows", i)
				}
				if j >= 0 && &mx.Row(i)[0] == &from.Row(j)[0] {
					shared++
				}
			}
			if shared != tc.shared {
				t.Errorf("shared %d rows, want %d", shared, tc.shared)
			}
		})
	}
}

// Many rebuilds of a few random edits each leave the rows right and the
// matrix in at most about four slabs for each slab's worth of rows.
func TestDraftSlabsBounded(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	mx := draftOf(t, randomRows(r, 200, slabDim, false), slabPer)
	var vecs [][]float32
	for _, v := range mx.Vectors() {
		vecs = append(vecs, slices.Clone(v))
	}
	for gen := range 300 {
		var src []int
		var next [][]float32
		for i := range vecs {
			switch r.IntN(60) {
			case 0: // removed
			case 1: // changed
				src, next = append(src, -1), append(next, nil)
			case 2: // a new row before it
				src, next = append(src, -1, i), append(next, nil, vecs[i])
			default:
				src, next = append(src, i), append(next, vecs[i])
			}
		}
		if len(src) == 0 {
			continue
		}
		d, err := newDraft(mx, src, slabDim, slabPer)
		if err != nil {
			t.Fatal(err)
		}
		for i, j := range src {
			if j < 0 {
				copy(d.Row(i), randomRows(r, 1, slabDim, false)[0])
			}
		}
		mx, vecs = d.Matrix(), next
		for i, j := range src {
			if j < 0 {
				vecs[i] = slices.Clone(mx.Row(i))
			}
		}
		if n, bound := len(mx.slabs), 4*len(vecs)/8+2; n > bound {
			t.Fatalf("generation %d: %d slabs for %d rows, want at most %d", gen, n, len(vecs), bound)
		}
	}
	for i := range vecs {
		if !slices.Equal(mx.Row(i), vecs[i]) {
			t.Fatalf("row %d differs after many rebuilds", i)
		}
	}
}

func TestNewDraftRejects(t *testing.T) {
	from := draftOf(t, randomRows(rand.New(rand.NewPCG(1, 1)), 10, slabDim, false), slabPer)
	for name, tc := range map[string]struct {
		from *Matrix
		src  []int
		dim  int
	}{
		"no rows":         {nil, nil, slabDim},
		"no width":        {nil, []int{-1}, 0},
		"no source":       {nil, []int{0}, slabDim},
		"row past source": {from, []int{10}, slabDim},
		"other width":     {from, []int{0}, slabDim + 1},
	} {
		if _, err := NewDraft(tc.from, tc.src, tc.dim); err == nil {
			t.Errorf("NewDraft(%s) = nil error", name)
		}
	}
}

// A slab none of whose rows is copied is allocated when one of its rows
// is first asked for, so that a provider's rebuild does not hold every new
// row beside every text still to send; one with a copied row is allocated
// with the draft. Rows never written come out zero.
func TestDraftAllocatesSlabsAsWritten(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	from := draftOf(t, randomRows(r, 16, slabDim, false), slabPer)
	src := slices.Concat(slices.Repeat([]int{-1}, 3*slabPer), []int{5}, slices.Repeat([]int{-1}, slabPer-1))
	d, err := newDraft(from, src, slabDim, slabPer)
	if err != nil {
		t.Fatal(err)
	}
	allocated := func() []bool {
		var got []bool
		for _, s := range d.slabs {
			got = append(got, s.m.Data != nil)
		}
		return got
	}
	if got, want := allocated(), []bool{false, false, false, true}; !slices.Equal(got, want) {
		t.Fatalf("slabs allocated with the draft: %v, want %v (only the one with a copied row)", got, want)
	}
	row := randomRows(r, 1, slabDim, false)[0]
	copy(d.Row(slabPer+2), row)
	if got, want := allocated(), []bool{false, true, false, true}; !slices.Equal(got, want) {
		t.Fatalf("after writing a row of the second slab: %v, want %v", got, want)
	}
	mx := d.Matrix()
	Normalize(row)
	if !slices.Equal(mx.Row(slabPer+2), row) {
		t.Errorf("the row written reads %v, want %v", mx.Row(slabPer+2), row)
	}
	if !slices.Equal(mx.Row(3*slabPer), from.Row(5)) {
		t.Errorf("the copied row reads %v, want %v", mx.Row(3*slabPer), from.Row(5))
	}
	for _, i := range []int{0, slabPer - 1, 2 * slabPer, 3*slabPer + 1} {
		if !slices.Equal(mx.Row(i), make([]float32, slabDim)) {
			t.Errorf("row %d, never written, reads %v, want zeros", i, mx.Row(i))
		}
	}
}
