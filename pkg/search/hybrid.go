package search

import (
	"context"
	"math"
	"slices"
	"strings"

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
	dense, lex         float32 // raw scores: cosine, BM25
	denseRank, lexRank int     // 1-based; 0 when not in that ranking
	fused              float32
}

// hybrid fuses the dense ranking of q (nil: no dense evidence) with the
// BM25 ranking of text and returns the k best. Three steps beyond plain
// fusion, each measured to pay on the shared eval sets:
//
//   - Multi-intent queries ("find X. Also recommend Y") rank each sentence
//     too, and a tool keeps its best sentence's normalised score, blended
//     with the whole query's by SentenceWeight, so every intent gets its
//     own strong matches.
//   - The tools of the servers behind the best candidates all become
//     candidates, and every tool gains SiblingBoost times its server's best
//     fused score: a request that needs one endpoint of an API often needs
//     its neighbours, and MCP catalogs group tools by server.
//   - Fusion itself: convex or reciprocal-rank, as configured.
func (a *answer) hybrid(ctx context.Context, q []float32, text string, k int, keep func(int) bool) ([]ranked, error) {
	snap, cfg := a.snap, &a.s.cfg
	var dense []index.Match
	if q != nil {
		var err error
		if dense, err = snap.Matrix.Search(ctx, q, max(100, 5*k), keep); err != nil {
			return nil, err
		}
	}
	lex, err := a.lexical(ctx, text, keep)
	if err != nil {
		return nil, err
	}
	cands := make(map[int]*ranked, len(dense)+len(lex))
	get := func(row int) *ranked {
		r := cands[row]
		if r == nil {
			r = &ranked{row: row}
			if q != nil {
				r.dense = snap.Matrix.Score(q, row)
			}
			cands[row] = r
		}
		return r
	}
	for i, m := range dense {
		get(m.Row).denseRank = i + 1
	}
	for i, m := range lex {
		r := get(m.Row)
		r.lex, r.lexRank = m.Score, i+1
	}
	rows := a.fuse(cands)
	if cfg.SiblingBoost > 0 && len(rows) > 0 {
		top := map[string]bool{}
		for _, r := range bestFirst(rows)[:min(siblingServers, len(rows))] {
			top[snap.Catalog.Tool(r.row).Server] = true
		}
		for i, t := range snap.Catalog.Tools() {
			if top[t.Server] && cands[i] == nil && (keep == nil || keep(i)) {
				get(i)
			}
		}
		rows = a.fuse(cands)
		best := map[string]float32{}
		for _, r := range rows {
			sv := snap.Catalog.Tool(r.row).Server
			best[sv] = max(best[sv], r.fused)
		}
		// Divided by 1+boost, a hybrid score stays in [0,1]: 1 is the best
		// dense and lexical match in the best server.
		beta := float32(cfg.SiblingBoost)
		for _, r := range rows {
			r.fused = (r.fused + beta*best[snap.Catalog.Tool(r.row).Server]) / (1 + beta)
		}
	}
	// TopK breaks ties by position; in row order, the earlier tool wins,
	// as in the single rankings.
	slices.SortFunc(rows, func(x, y *ranked) int { return x.row - y.row })
	scores := make([]float32, len(rows))
	for i, r := range rows {
		scores[i] = r.fused
	}
	top := index.TopK(scores, k, nil)
	out := make([]ranked, len(top))
	for i, m := range top {
		out[i] = *rows[m.Row]
	}
	return out, nil
}

// lexical is the BM25 side: every tool with a positive score for the whole
// query, blended with its best per-sentence score when the query has
// several sentences. Scores are normalised to [0,1] when blended.
func (a *answer) lexical(ctx context.Context, text string, keep func(int) bool) ([]index.Match, error) {
	kw := a.snap.Keywords
	whole, err := kw.Search(ctx, text, kw.Len(), keep)
	if err != nil {
		return nil, err
	}
	g := float32(a.s.cfg.SentenceWeight)
	sents := sentences(text)
	if g <= 0 || len(sents) < 2 || len(whole) == 0 {
		return whole, nil
	}
	blend := make(map[int]float32, len(whole))
	for _, m := range whole {
		blend[m.Row] = (1 - g) * m.Score / whole[0].Score
	}
	best := map[int]float32{}
	for _, st := range sents {
		ms, err := kw.Search(ctx, st, kw.Len(), keep)
		if err != nil {
			return nil, err
		}
		for _, m := range ms {
			best[m.Row] = max(best[m.Row], m.Score/ms[0].Score)
		}
	}
	for row, b := range best {
		blend[row] += g * b
	}
	out := make([]index.Match, 0, len(blend))
	for row, s := range blend {
		out = append(out, index.Match{Row: row, Score: s})
	}
	slices.SortFunc(out, func(x, y index.Match) int {
		switch {
		case x.Score > y.Score:
			return -1
		case x.Score < y.Score:
			return 1
		}
		return x.Row - y.Row
	})
	return out, nil
}

// fuse sets each candidate's fused score from its dense and lexical ones.
func (a *answer) fuse(cands map[int]*ranked) []*ranked {
	alpha := float32(a.s.cfg.HybridAlpha)
	dmin, dmax := float32(math.Inf(1)), float32(math.Inf(-1))
	var lmax float32
	for _, r := range cands {
		dmin, dmax = min(dmin, r.dense), max(dmax, r.dense)
		lmax = max(lmax, r.lex)
	}
	rows := make([]*ranked, 0, len(cands))
	for _, r := range cands {
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
		rows = append(rows, r)
	}
	return rows
}

func bestFirst(rows []*ranked) []*ranked {
	out := slices.Clone(rows)
	slices.SortFunc(out, func(x, y *ranked) int {
		switch {
		case x.fused > y.fused:
			return -1
		case x.fused < y.fused:
			return 1
		}
		return x.row - y.row
	})
	return out
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
			if p := strings.TrimSpace(text[start:i]); len(strings.Fields(p)) >= 3 {
				out = append(out, p)
			}
			start = i + 1
		}
	}
	if p := strings.TrimSpace(text[start:]); len(strings.Fields(p)) >= 3 {
		out = append(out, p)
	}
	return out
}
