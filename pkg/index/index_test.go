package index

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestSearch(t *testing.T) {
	mx := draftOf(t, [][]float32{{1, 0}, {0, 2}, {1, 1}, {0, 0}, {-1, 0}}, 0)
	got, err := mx.Candidates(Query{Dense: []float32{1, 0}}, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	rows := []int{}
	for _, m := range got {
		rows = append(rows, m.Row)
	}
	// Row 1 and the zero row 3 tie at 0: the earlier row wins.
	if diff := cmp.Diff([]int{0, 2, 1}, rows); diff != "" {
		t.Errorf("Search rows mismatch (-want +got):\n%s", diff)
	}
	if got[0].Score < 0.999 || got[1].Score < 0.70 || got[1].Score > 0.71 {
		t.Errorf("scores %v: rows are not unit length", got)
	}
	if _, err := mx.Candidates(Query{Dense: []float32{1, 0, 0}}, 3, nil); !errors.Is(err, ErrDimension) {
		t.Errorf("Search(3-dim query) error = %v, want ErrDimension", err)
	}
	only := func(r int) bool { return r == 4 }
	if got, _ := mx.Candidates(Query{Dense: []float32{1, 0}}, 3, only); len(got) != 1 || got[0].Row != 4 {
		t.Errorf("Search with keep = %v, want only row 4", got)
	}
}

// TestTopKMatchesSort checks the selection, by insertion (k up to
// insertionK) and by heap, against a full stable sort.
func TestTopKMatchesSort(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	// TopKInto gets a buffer used before, too small every few trials: what
	// it held must not leak into the answer.
	var buf []Match
	for trial := range 200 {
		n := 1 + r.IntN(300)
		scores := make([]float32, n)
		for i := range scores {
			scores[i] = float32(r.IntN(20)) / 10 // many ties
		}
		switch trial % 6 { // candidates often come nearly sorted
		case 2:
			slices.Sort(scores)
		case 4:
			slices.Sort(scores)
			slices.Reverse(scores)
		}
		k := 1 + r.IntN(60)
		// Every other trial keeps only rows not divisible by 3.
		var keep func(int) bool
		if trial%2 == 1 {
			keep = func(row int) bool { return row%3 != 0 }
		}
		var want []Match
		for i, s := range scores {
			if keep == nil || keep(i) {
				want = append(want, Match{i, s})
			}
		}
		slices.SortStableFunc(want, func(a, b Match) int {
			switch {
			case a.Score > b.Score:
				return -1
			case a.Score < b.Score:
				return 1
			}
			return 0
		})
		want = want[:min(k, len(want))]
		if diff := cmp.Diff(want, TopK(scores, k, keep), cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("trial %d: TopK(n=%d, k=%d) mismatch (-want +got):\n%s", trial, n, k, diff)
		}
		if trial%5 == 0 {
			buf = nil
		}
		buf = TopKInto(buf, scores, k, keep)
		if diff := cmp.Diff(want, buf, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("trial %d: TopKInto(n=%d, k=%d) mismatch (-want +got):\n%s", trial, n, k, diff)
		}
	}
}

// TestSparseScoresMatchGemv checks the sparse product against Gemv over the
// same query written out densely, for row counts around the four-row step.
func TestSparseScoresMatchGemv(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, rows := range []int{1, 3, 4, 5, 8, 73} {
		const cols = 64
		vecs := make([][]float32, rows)
		for i := range vecs {
			vecs[i] = make([]float32, cols)
			for j := range vecs[i] {
				vecs[i][j] = float32(r.NormFloat64())
			}
		}
		mx := draftOf(t, vecs, 0)
		dense := make([]float32, cols)
		for j := 0; j < cols; j += 1 + r.IntN(7) {
			dense[j] = float32(r.NormFloat64())
		}
		sp := sparseOf(dense)
		want, got := make([]float32, rows), make([]float32, rows)
		if err := mx.ScoresInto(dense, want); err != nil {
			t.Fatal(err)
		}
		if err := mx.SparseScoresInto(sp, got); err != nil {
			t.Fatal(err)
		}
		for i := range want {
			if d := math.Abs(float64(want[i] - got[i])); d > 1e-5 {
				t.Errorf("rows=%d: row %d scores %v sparse, %v dense", rows, i, got[i], want[i])
			}
		}
	}
	mx := draftOf(t, [][]float32{{1, 0}}, 0)
	for _, bad := range []Sparse{{Idx: []int32{2}, Val: []float32{1}}, {Idx: []int32{-1}, Val: []float32{1}}, {Idx: []int32{0}, Val: nil}} {
		if err := mx.SparseScoresInto(bad, make([]float32, 1)); !errors.Is(err, ErrDimension) {
			t.Errorf("SparseScoresInto(%v) error = %v, want ErrDimension", bad, err)
		}
	}
}

// sparseOf is dense's nonzero entries, in column order.
func sparseOf(dense []float32) Sparse {
	var sp Sparse
	for j, v := range dense {
		if v != 0 {
			sp.Idx, sp.Val = append(sp.Idx, int32(j)), append(sp.Val, v)
		}
	}
	return sp
}

// TestColumnsScoreAsRows: a matrix with its columns scores a sparse query
// exactly as the row-major product does, bit for bit, for row counts
// around the vector code's steps (4 and 16 values) and with a zero among
// the query's values; and everything else about it is the matrix's own.
func TestColumnsScoreAsRows(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, rows := range []int{1, 3, 4, 5, 15, 16, 17, 73, 200} {
		const cols = 96
		vecs := make([][]float32, rows)
		for i := range vecs {
			vecs[i] = make([]float32, cols)
			for j := range vecs[i] {
				if r.IntN(3) == 0 { // as sparse as the local embedder's rows
					vecs[i][j] = float32(r.NormFloat64())
				}
			}
		}
		byRow := draftOf(t, vecs, 0)
		both := byRow.WithColumns()
		if both.cols == nil || both.Bytes() != 2*byRow.Bytes() {
			t.Fatalf("rows=%d: columns not kept (%d bytes, by row %d)", rows, both.Bytes(), byRow.Bytes())
		}
		for q := range 20 {
			dense := make([]float32, cols)
			for j := 0; j < cols; j += 1 + r.IntN(5) {
				dense[j] = float32(r.NormFloat64())
			}
			Normalize(dense)
			sp := sparseOf(dense)
			if q == 0 {
				sp.Idx, sp.Val = append(sp.Idx, cols-1), append(sp.Val, 0)
			}
			want, got := make([]float32, rows), make([]float32, rows)
			if err := byRow.SparseScoresInto(sp, want); err != nil {
				t.Fatal(err)
			}
			if err := both.SparseScoresInto(sp, got); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(want, got) {
				t.Fatalf("rows=%d: scores %v with columns, %v by row", rows, got, want)
			}
			for i := range rows {
				if d := both.Dot(Query{Sparse: sp}, i); d != want[i] {
					t.Fatalf("rows=%d: Dot of row %d is %v, the product's %v", rows, i, d, want[i])
				}
			}
			if both.PreferSparse(len(sp.Idx)) != byRow.PreferSparse(len(sp.Idx)) {
				t.Fatalf("rows=%d: the columns changed which queries are sparse", rows)
			}
		}
		if bin := both.WithBinary(3); bin.cols == nil {
			t.Errorf("rows=%d: binary codes dropped the columns", rows)
		}
		for i := range rows {
			if !slices.Equal(both.Row(i), byRow.Row(i)) {
				t.Fatalf("rows=%d: row %d differs", rows, i)
			}
		}
	}
	// Past sparseMaxBytes the copy would cost more than a cache holds.
	big, err := Adopt(make([]float32, (sparseMaxBytes/4/1024+1)*1024), sparseMaxBytes/4/1024+1, 1024, nil)
	if err != nil {
		t.Fatal(err)
	}
	if big.WithColumns() != big {
		t.Error("a matrix over sparseMaxBytes got its columns")
	}
}
