package search

import (
	"context"
	"math"
	"slices"
	"strings"
	"unicode"

	"github.com/toolsearch/toolsearch/pkg/index"
)

// Fusion methods for hybrid ranking.
const (
	// FusionConvex adds the dense cosine and the BM25 score, each
	// normalised to [0,1] over this query's candidates, weighted by
	// HybridAlpha. Scores keep their margins, so a strong lexical match can
	// outweigh a weak dense one and vice versa.
	FusionConvex = "convex"
	// FusionRRF is reciprocal-rank fusion, 1/(60+rank) summed over both
	// rankings: no calibration needed, but margins are lost. It measured
	// below convex fusion on every dev half (evals/README.md).
	FusionRRF = "rrf"
)

// Tuned on the dev halves of the shared eval sets (evals/README.md).
const (
	DefaultHybridAlpha    = 0.3
	DefaultSiblingBoost   = 1.0
	DefaultSentenceWeight = 0.5
	rrfK                  = 60
	siblingServers        = 3 // servers whose tools all join the candidates
)

// DefaultConfidence is, per mode, the confidence under which the best
// retrieved tool is more often wrong than right, measured for the local
// embedder on the dev halves of the shared eval sets (evals/README.md). An
// OpenAI-compatible model's cosines sit on another scale: calibrate with
// toolsearch eval, which reports the threshold for any catalog and model.
var DefaultConfidence = map[string]float64{"hybrid": 0.12, "semantic": 0.24, "keyword": 0.09}

// ranked is one tool's standing in each ranker, for fusion and explain.
type ranked struct {
	row                int
	dense, lex         float32 // raw scores: cosine, BM25 (blended with sentences)
	denseRank, lexRank int     // 1-based; 0 when not in that ranking
	fused              float32
}

// hybrid fuses the dense ranking of q (nil: no dense evidence) with the
// BM25 ranking of text and returns the k best. Both rankers score every
// tool into a vector once; candidates are the dense top few and every tool
// with a lexical match. Beyond plain fusion, each measured to pay on the
// shared eval sets:
//
//   - Multi-intent queries ("find X. Also recommend Y") rank each sentence
//     too, and a tool keeps its best sentence's normalised score, blended
//     with the whole query's by SentenceWeight, so every intent gets its
//     own strong matches.
//   - The tools of the servers behind the best candidates all become
//     candidates, and every tool gains SiblingBoost times its server's best
//     fused score: a request that needs one endpoint of an API often needs
//     its neighbours, and MCP catalogs group tools by server.
func (a *answer) hybrid(ctx context.Context, q *index.Query, text string, k int, keep func(int) bool) ([]ranked, error) {
	snap, cfg := a.snap, &a.s.cfg
	n := snap.Catalog.Len()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	sc := snap.scratch.Get().(*hybridScratch)
	defer snap.scratch.Put(sc)
	sc.reset()
	dense, denseRank, member := sc.dense, sc.denseRank, sc.member
	ranks := cfg.Fusion == FusionRRF || a.req.Explain // are dense ranks shown or used?
	nDense := 0
	if q == nil {
		clear(dense) // no dense evidence: every candidate's cosine is 0
	}
	mx := snap.Matrix
	// A quantised index scores only its dense candidates; every other
	// candidate gets its exact cosine as it joins.
	lazy := q != nil && mx.Quantization() != index.QuantNone
	join := func(row int) {
		if !member[row] && lazy {
			dense[row] = mx.Dot(*q, row)
		}
		member[row] = true
	}
	if lazy {
		top, err := mx.Candidates(*q, max(100, 5*k), keep)
		if err != nil {
			return nil, err
		}
		for i, m := range top {
			dense[m.Row], denseRank[m.Row], member[m.Row] = m.Score, int32(i+1), true
		}
		nDense = len(top)
	} else if q != nil {
		if err := mx.Scores(*q, dense); err != nil {
			return nil, err
		}
		if few := max(100, 5*k); ranks || n > few {
			top := index.TopK(dense, few, keep)
			for i, m := range top {
				denseRank[m.Row] = int32(i + 1)
				member[m.Row] = true
			}
			nDense = len(top)
		} else {
			// Every kept tool is among the dense top few, and the order
			// among them matters to nothing but ranks: no selection needed.
			for row := range n {
				if keep == nil || keep(row) {
					member[row] = true
					nDense++
				}
			}
		}
	}
	lex := a.lexical(text, sc)
	// Candidates are collected in row order (TopK then breaks ties by
	// position, so the earlier tool wins, as in the single rankings).
	for row, s := range lex {
		if s > 0 && (keep == nil || keep(row)) {
			join(row)
		}
	}
	collect := func() []ranked {
		out := sc.cands[:0]
		for row, in := range member {
			if in {
				out = append(out, ranked{row: row, dense: dense[row], lex: lex[row], denseRank: int(denseRank[row])})
			}
		}
		sc.cands = out
		return out
	}
	cands := collect()
	if ranks {
		a.lexRanks(cands)
	}
	a.fuse(cands)
	if cfg.SiblingBoost > 0 && len(cands) > 0 {
		fused := sc.floats(len(cands))
		for i, r := range cands {
			fused[i] = r.fused
		}
		top := sc.serverTop
		for _, m := range index.TopK(fused, siblingServers, nil) {
			top[snap.serverOf[cands[m.Row].row]] = true
		}
		grew := false
		for i, sv := range snap.serverOf {
			if top[sv] && !member[i] && (keep == nil || keep(i)) {
				join(i)
				grew = true
			}
		}
		if grew {
			cands = collect()
			if ranks {
				a.lexRanks(cands)
			}
			a.fuse(cands)
		}
		best := sc.serverBest
		for _, r := range cands {
			sv := snap.serverOf[r.row]
			best[sv] = max(best[sv], r.fused)
		}
		// Divided by 1+boost, a hybrid score stays in [0,1]: 1 is the best
		// dense and lexical match in the best server.
		beta := float32(cfg.SiblingBoost)
		for i := range cands {
			r := &cands[i]
			r.fused = (r.fused + beta*best[snap.serverOf[r.row]]) / (1 + beta)
		}
	}
	scores := sc.floats(len(cands))
	for i, r := range cands {
		scores[i] = r.fused
	}
	top := index.TopK(scores, k, nil)
	out := make([]ranked, len(top)) // outlives the scratch
	for i, m := range top {
		out[i] = cands[m.Row]
	}
	return out, nil
}

// hybridScratch is the working memory of one hybrid query, pooled per
// snapshot (its sizes are the catalog's), so that a query allocates little
// more than its answer.
type hybridScratch struct {
	dense, lex, best, part, tmp []float32 // per tool; tmp is per candidate
	denseRank                   []int32
	member                      []bool
	serverTop                   []bool // per server
	serverBest                  []float32
	cands                       []ranked
}

func newHybridScratch(tools, servers int) *hybridScratch {
	return &hybridScratch{
		dense: make([]float32, tools), lex: make([]float32, tools), best: make([]float32, tools), part: make([]float32, tools),
		denseRank: make([]int32, tools), member: make([]bool, tools),
		serverTop: make([]bool, servers), serverBest: make([]float32, servers),
	}
}

// reset zeroes what hybrid reads before writing; the score vectors are
// overwritten whole by their rankers.
func (sc *hybridScratch) reset() {
	clear(sc.denseRank)
	clear(sc.member)
	clear(sc.serverTop)
	clear(sc.serverBest)
}

// floats returns n scratch floats, reusing one buffer: each use ends before
// the next begins.
func (sc *hybridScratch) floats(n int) []float32 {
	if cap(sc.tmp) < n {
		sc.tmp = make([]float32, n)
	}
	return sc.tmp[:n]
}

// lexical is the BM25 side, one score per tool: the whole query's,
// blended with the tool's best per-sentence score when the query has
// several sentences (each normalised to [0,1] when blended). The scores
// live in sc.
func (a *answer) lexical(text string, sc *hybridScratch) []float32 {
	kw := a.snap.Keywords
	whole := sc.lex
	a.keywords(text).ScoresInto(whole)
	g := float32(a.s.cfg.SentenceWeight)
	if g <= 0 {
		return whole
	}
	sents := sentences(text)
	var top float32
	for _, s := range whole {
		top = max(top, s)
	}
	if len(sents) < 2 || top <= 0 {
		return whole
	}
	for i := range whole {
		whole[i] = (1 - g) * whole[i] / top
	}
	best, part := sc.best, sc.part
	clear(best)
	for _, st := range sents {
		kw.Prepare(st).ScoresInto(part)
		if m := slices.Max(part); m > 0 {
			for i, s := range part {
				best[i] = max(best[i], s/m)
			}
		}
	}
	for i := range whole {
		whole[i] += g * best[i]
	}
	return whole
}

// lexRanks sets each candidate's rank among those with a lexical score,
// for reciprocal-rank fusion and explain.
func (a *answer) lexRanks(cands []ranked) {
	order := make([]int, 0, len(cands))
	for i, r := range cands {
		if r.lex > 0 {
			order = append(order, i)
		}
	}
	slices.SortFunc(order, func(x, y int) int {
		switch {
		case cands[x].lex > cands[y].lex:
			return -1
		case cands[x].lex < cands[y].lex:
			return 1
		}
		return cands[x].row - cands[y].row
	})
	for rank, i := range order {
		cands[i].lexRank = rank + 1
	}
}

// fuse sets each candidate's fused score from its dense and lexical ones.
func (a *answer) fuse(cands []ranked) {
	alpha := float32(a.s.cfg.HybridAlpha)
	dmin, dmax := float32(math.Inf(1)), float32(math.Inf(-1))
	var lmax float32
	for _, r := range cands {
		dmin, dmax = min(dmin, r.dense), max(dmax, r.dense)
		lmax = max(lmax, r.lex)
	}
	for i := range cands {
		r := &cands[i]
		switch a.s.cfg.Fusion {
		case FusionRRF:
			r.fused = 0
			if r.denseRank > 0 {
				r.fused += 1 / float32(rrfK+r.denseRank)
			}
			if r.lexRank > 0 {
				r.fused += 1 / float32(rrfK+r.lexRank)
			}
		default:
			var dn, ln float32
			if dmax > dmin {
				dn = (r.dense - dmin) / (dmax - dmin)
			}
			if lmax > 0 {
				ln = r.lex / lmax
			}
			r.fused = alpha*dn + (1-alpha)*ln
		}
	}
}

// sentences splits text at sentence ends, keeping pieces of three or more
// words. A full stop not followed by a space ("e.g", "3.5", "example.com")
// does not end a sentence.
func sentences(text string) []string {
	var out []string
	start := 0
	for i := 0; i < len(text); i++ {
		switch text[i] {
		case '.', '?', '!', ';':
			if i+1 < len(text) && text[i+1] != ' ' && text[i+1] != '\n' {
				continue
			}
			if p := strings.TrimSpace(text[start:i]); hasWords(p, 3) {
				out = append(out, p)
			}
			start = i + 1
		}
	}
	if p := strings.TrimSpace(text[start:]); hasWords(p, 3) {
		out = append(out, p)
	}
	return out
}

// hasWords reports whether s has at least n space-separated words, as
// len(strings.Fields(s)) >= n would, without building them.
func hasWords(s string, n int) bool {
	words, in := 0, false
	for _, r := range s {
		switch space := unicode.IsSpace(r); {
		case space:
			in = false
		case !in:
			in = true
			if words++; words >= n {
				return true
			}
		}
	}
	return n <= 0
}
