package index

import (
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
)

// A matrix kept by column holds the rows a Draft would (normalised alike),
// scores a sparse query bit for bit as the row-major matrix does, a dense
// one within float32 rounding, and answers Row, Dot and binary codes the
// same, however its rows were set (in batches, from several goroutines).
func TestColumnsMatchRows(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, tt := range []struct{ rows, full int }{{1, 4}, {7, 4}, {pieceRows + 3, 4}, {3*pieceRows + 17, 4}, {2*blockRows + 300, 4}, {blockRows + 5, 10}} {
		rows := tt.rows
		const dim = 96
		vecs := make([][]float32, rows)
		block := make([]float32, 0, rows*dim)
		for i := range vecs {
			vecs[i] = make([]float32, dim)
			for j := range vecs[i] {
				if r.IntN(10) < tt.full { // of ten columns, full are set
					vecs[i][j] = float32(r.NormFloat64())
				}
			}
			vecs[i][i%dim] += 1 // never a zero row
			block = append(block, vecs[i]...)
		}
		want := draftOf(t, vecs, 0)
		cols := NewColumns(rows, dim)
		var wg sync.WaitGroup
		batch := 5 + r.IntN(2)*300 // within a tile, or over one
		for b, first := 0, 0; first < rows; b, first = b+1, first+batch {
			end := min(first+batch, rows)
			// Every other batch with some zero columns marked too, as
			// features that cancel leave them.
			var extra *rand.Rand
			if b%2 == 1 {
				extra = r
			}
			touched := touchedOf(block[first*dim:end*dim], dim, extra)
			wg.Go(func() { cols.SetRows(first, slices.Clone(block[first*dim:end*dim]), touched) })
		}
		wg.Wait()
		got, err := cols.Matrix()
		if err != nil {
			t.Fatal(err)
		}
		gotVecs := got.Vectors()
		for i := range rows {
			if !slices.Equal(got.Row(i), want.Row(i)) || !slices.Equal(gotVecs[i], want.Row(i)) {
				t.Fatalf("rows=%d: row %d differs", rows, i)
			}
		}
		// All yields the same rows, in order, by column and by row.
		for _, mx := range []*Matrix{got, want} {
			n := 0
			for i, row := range mx.All() {
				if i != n || !slices.Equal(row, want.Row(i)) {
					t.Fatalf("rows=%d: All's row %d (the %dth) differs", rows, i, n)
				}
				n++
			}
			if n != rows {
				t.Fatalf("rows=%d: All yielded %d", rows, n)
			}
		}
		if tt.full == 10 && got.blocks[0].dense == nil {
			t.Errorf("rows=%d: full rows kept sparse", rows)
		}
		switch dense := got.Bytes() >= want.Bytes(); {
		case rows > pieceRows && tt.full < 10 && dense:
			t.Errorf("rows=%d: %d bytes by column, %d by row: the zeros are kept", rows, got.Bytes(), want.Bytes())
		case got.Bytes() > want.Bytes()+int64(len(got.blocks))*4096:
			t.Errorf("rows=%d: full rows take %d bytes by column, %d by row", rows, got.Bytes(), want.Bytes())
		}
		dense := make([]float32, dim)
		for j := 0; j < dim; j += 1 + r.IntN(9) {
			dense[j] = float32(r.NormFloat64())
		}
		Normalize(dense)
		sp := sparseOf(dense)
		ws, gs := make([]float32, rows), make([]float32, rows)
		want.SparseScoresInto(sp, ws)
		got.SparseScoresInto(sp, gs)
		if !slices.Equal(ws, gs) {
			t.Errorf("rows=%d: sparse scores differ by column and by row", rows)
		}
		want.ScoresInto(dense, ws)
		got.ScoresInto(dense, gs)
		for i := range ws {
			if d := math.Abs(float64(ws[i] - gs[i])); d > 1e-5 {
				t.Errorf("rows=%d: row %d scores %v by column, %v by row", rows, i, gs[i], ws[i])
			}
			if d := math.Abs(float64(want.Dot(Query{Sparse: sp}, i) - got.Dot(Query{Sparse: sp}, i))); d > 1e-6 {
				t.Errorf("rows=%d: Dot of row %d differs by %v", rows, i, d)
			}
		}
		if got.WithBinary(3) != got {
			t.Errorf("rows=%d: binary codes added to a matrix kept by column", rows)
		}
	}
}

func TestByColumn(t *testing.T) {
	if ByColumn(4076, 1024) || !ByColumn(10000, 1024) {
		t.Error("ByColumn: a 16 MiB matrix is kept by row, a 40 MB one by column")
	}
}

// touchedOf marks the nonzero columns of rows (row-major, width dim) and,
// with r, a few zero ones besides, as embedding.Rows does.
func touchedOf(rows []float32, dim int, r *rand.Rand) []uint64 {
	words := (dim + 63) / 64
	bits := make([]uint64, len(rows)/dim*words)
	for i, x := range rows {
		row, j := i/dim, i%dim
		if x != 0 || r != nil && r.IntN(8) == 0 {
			bits[row*words+j/64] |= 1 << (j % 64)
		}
	}
	return bits
}

// TestNormTouched: over a row's touched columns, the length is Norm's to
// the last bit, whatever the width (Norm's four sums and its tail).
func TestNormTouched(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, dim := range []int{1, 3, 5, 64, 65, 99, 1024} {
		for range 50 {
			v := make([]float32, dim)
			for j := range v {
				if r.IntN(3) == 0 {
					v[j] = float32(r.NormFloat64() * math.Pow(10, float64(r.IntN(9)-4)))
				}
			}
			if got, want := normTouched(v, touchedOf(v, dim, r)), Norm(v); got != want {
				t.Fatalf("dim %d: %v over the touched columns, %v by Norm", dim, got, want)
			}
		}
	}
}
