package index

import "time"

// What scoring costs, in nanoseconds of CPU for each value a layout reads,
// on the 2-core machine of BENCHMARKS.md ("What a search costs"), where
// BenchmarkCost reports each estimate against the time it took. They price
// a search for a caller's budget and choose between ways of scoring; they
// are estimates, not timings: within a factor of about 1.6 on the large
// indexes the service builds, high on small ones, whose rows sit in
// cache, and on random rows for the lookups of nsLookup.
const (
	nsStreamed = 0.14 // a value Gemv or Saxpy streams through
	nsGathered = 2.5  // a value a sparse query picks out of each row
	nsColumn   = 0.6  // an entry of a column of a matrix kept by column
	nsCodeWord = 1.5  // a word of a binary code compared, both planes
	nsSelected = 1.0  // a score TopK considers
	// One row's Dot reads a row the scan did not just stream past: a
	// dense one at memory's pace, a few values of a sparse query a cache
	// miss each; in a matrix kept by column, a value is a search in its
	// column, pages away from the last (random rows: 26 to 85 ns; the
	// local embedder's 100,000 generated tools: 100 to 160).
	nsRowValue = 0.75
	nsRowMiss  = 15.0
	nsLookup   = 100.0
)

// ScanCost is about the CPU time of Candidates for q: scoring every row
// and selecting the best (for a binary index, its codes and the rows it
// rescores). It grows with what the layout reads, not with the rows
// alone: a short local-embedder query reads a few of the columns of a
// matrix kept by column, a long one nearly all of them.
func (mx *Matrix) ScanCost(q Query) time.Duration {
	if mx.codes != nil {
		rows := float64(mx.m.Rows)
		return ns(rows*(mx.codeWords(q)*nsCodeWord+nsSelected) + float64(mx.codes.rescore)*float64(mx.dotCost(q)))
	}
	return mx.ExactCost(q)
}

// codeWords is how many words of each row's codes q is compared with.
func (mx *Matrix) codeWords(q Query) float64 {
	if q.Dense == nil {
		return float64(min(len(q.Sparse.Idx), mx.codes.words))
	}
	return float64(mx.codes.words) // a dense query's codes fill every word
}

// ExactCost is about the CPU time of Scores for q, and of selecting the
// best of them.
func (mx *Matrix) ExactCost(q Query) time.Duration {
	return ns(mx.readCost(q) + float64(mx.m.Rows)*nsSelected)
}

// readCost is what scoring every row for q reads, in nanoseconds.
func (mx *Matrix) readCost(q Query) float64 {
	rows := float64(mx.m.Rows)
	var read float64
	switch {
	case mx.of != nil && mx.scansWhole(q):
		return mx.base.readCost(q)
	case mx.sketch != nil: // its scores are its codes' (Sketch)
		read = rows * mx.codeWords(q) * nsCodeWord
	case mx.blocks != nil && q.Dense != nil:
		for j, v := range q.Dense {
			if v != 0 {
				read += float64(mx.colEntries[j]) * nsColumn
			}
		}
	case mx.blocks != nil:
		for _, j := range q.Sparse.Idx {
			read += float64(mx.colEntries[j]) * nsColumn
		}
	case q.Dense != nil:
		read = rows * float64(mx.m.Cols) * nsStreamed
	case mx.cols != nil:
		read = rows * float64(len(q.Sparse.Idx)) * nsStreamed
	default:
		read = rows * float64(len(q.Sparse.Idx)) * nsGathered
	}
	return read
}

// DotCost is about the CPU time of Dot for q and one row.
func (mx *Matrix) DotCost(q Query) time.Duration { return ns(mx.dotCost(q)) }

func (mx *Matrix) dotCost(q Query) float64 {
	switch {
	case mx.sketch != nil:
		// The query's codes and its product with the mean, then a row's.
		return float64(mx.m.Cols)*nsRowValue + mx.codeWords(q)*nsCodeWord
	case mx.of != nil:
		return mx.base.dotCost(q)
	case mx.blocks != nil && q.Dense != nil:
		// columnDot looks up the query's nonzeros alone.
		var nnz float64
		for _, v := range q.Dense {
			if v != 0 {
				nnz++
			}
		}
		return nnz * nsLookup
	case mx.blocks != nil:
		return float64(len(q.Sparse.Idx)) * nsLookup
	case q.Dense != nil:
		return float64(len(q.Dense)) * nsRowValue
	}
	return min(float64(len(q.Sparse.Idx))*nsRowMiss, float64(mx.m.Cols)*nsRowValue)
}

// countEntries is how many values each column of blocks holds, zeros
// of a dense block included: what a query reading the column reads.
func countEntries(blocks []block, dim int) []int64 {
	n := make([]int64, dim)
	for i := range blocks {
		b := &blocks[i]
		for j := range dim {
			if b.dense != nil {
				n[j] += int64(b.n)
			} else {
				n[j] += int64(b.start[(j+1)*b.np] - b.start[j*b.np])
			}
		}
	}
	return n
}

func ns(x float64) time.Duration { return time.Duration(x) }
