// Package rank orders tools for one query: the dense ranking (cosines from
// package index), the lexical one (BM25F from package bm25), their fusion,
// the server-sibling boost and a place for every intent of the query. It scores and collects; what a caller may
// see and what else an answer holds (core tools, templates) is package
// search's request policy, passed in as a keep function.
package rank

import (
	"cmp"
	"context"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/toolsearch/toolsearch/pkg/bm25"
	"github.com/toolsearch/toolsearch/pkg/index"
)

// Fusion methods for hybrid ranking.
const (
	// FusionConvex adds the dense cosine and the BM25 score, each
	// normalised to [0,1] over this query's candidates, weighted by
	// Config.Alpha. Scores keep their margins, so a strong lexical match can
	// outweigh a weak dense one and vice versa.
	FusionConvex = "convex"
	// FusionRRF is reciprocal-rank fusion, 1/(60+rank) summed over both
	// rankings: no calibration needed, but margins are lost. It measured
	// below convex fusion on every dev half (evals/README.md).
	FusionRRF = "rrf"
)

// Alpha and the sentence weight were tuned on the dev halves of the first two
// shared sets, the boost and intentShare on all five whole sets
// (evals/README.md, "What was tried").
const (
	DefaultHybridAlpha    = 0.3
	DefaultSiblingBoost   = 4.0
	DefaultSentenceWeight = 0.5
	// DefaultCompanionBoost is how much a learned companion of one of the
	// best tools gains (Config.CompanionBoost): none. Replaying half of
	// each shared set as traffic, a boost of 0.5 lowered metatool and
	// moved no other set, and 2.0 lowered metatool's hit@1 by 17 points
	// (evals/README.md, "Learning from use"); companions are learned and
	// shown, and rank only where an operator turns them on.
	DefaultCompanionBoost = 0
	companionAnchors      = 3 // the best tools whose companions gain
	rrfK                  = 60
	siblingServers        = 3 // servers whose tools all join the candidates
	// intentShare is the most of the top k reserved for the best match of
	// each intent that the fused ranking left out.
	intentShare = 0.5
)

// MaxIntents bounds the intents ranked apart, each a keyword ranking of
// the whole catalog: 4,096 bytes of three-word sentences made 256 of
// them, and a search at 100,000 tools 15 times its usual cost. The shared
// sets' queries have at most 15.
const MaxIntents = 16

// Config holds the ranking knobs; New fills in defaults for zero values.
type Config struct {
	// Fusion is how hybrid ranking combines dense and BM25 rankings:
	// FusionConvex (the default) or FusionRRF.
	Fusion string
	// Alpha is the dense ranking's weight in convex fusion, in (0,1];
	// DefaultHybridAlpha when 0.
	Alpha float64
	// SiblingBoost scales each tool's fused score by 1 + SiblingBoost
	// times its server's best fused score; DefaultSiblingBoost when 0, off
	// when negative.
	SiblingBoost float64
	// SentenceWeight blends per-intent BM25 scores into multi-intent
	// queries' lexical scores, in [0,1); DefaultSentenceWeight when 0, off
	// when negative. Off also turns off the places reserved for intents.
	SentenceWeight float64
	// CompanionBoost: each tool gains CompanionBoost times its strongest
	// link to one of the best companionAnchors tools (times that tool's
	// score), and joins the candidates; off when 0 (DefaultCompanionBoost)
	// or negative. Nothing changes without learned companions.
	CompanionBoost float64
}

// WithDefaults is c with every zero value replaced by its default, and
// out-of-range values turned off as documented.
func (c Config) WithDefaults() Config {
	if c.Fusion == "" {
		c.Fusion = FusionConvex
	}
	if c.Alpha <= 0 || c.Alpha > 1 {
		c.Alpha = DefaultHybridAlpha
	}
	switch {
	case c.SiblingBoost == 0:
		c.SiblingBoost = DefaultSiblingBoost
	case c.SiblingBoost < 0:
		c.SiblingBoost = 0
	}
	switch {
	case c.CompanionBoost == 0:
		c.CompanionBoost = DefaultCompanionBoost
	case c.CompanionBoost < 0:
		c.CompanionBoost = 0
	}
	switch {
	case c.SentenceWeight == 0:
		c.SentenceWeight = DefaultSentenceWeight
	case c.SentenceWeight < 0 || c.SentenceWeight >= 1:
		c.SentenceWeight = 0
	}
	return c
}

// Ranker ranks the tools of one snapshot. It is immutable and safe for
// concurrent use.
type Ranker struct {
	cfg      Config
	dense    *index.Matrix // nil: no dense index
	lexical  *bm25.Index
	serverOf []int32 // row -> server number, for the sibling boost
	// byServer lists the rows of each server: server v's are
	// byServer[serverStart[v]:serverStart[v+1]], in row order.
	byServer, serverStart []int32
	scratch               *sync.Pool // of *scratch sized for this catalog
	// companions are, by row, the tools callers used with it for one task
	// (package learn); nil when none were learned.
	companions [][]Companion
}

// Companion is a tool used with another for one task, and how strongly:
// in (0,1), growing with the evidence.
type Companion struct {
	Row      int32
	Strength float32
}

// New returns a ranker over dense (nil when there is none) and lexical,
// whose rows belong to the servers numbered by serverOf (servers of them),
// with each row's learned companions (nil: none).
func New(cfg Config, dense *index.Matrix, lexical *bm25.Index, serverOf []int32, servers int, companions [][]Companion) *Ranker {
	n := lexical.Len()
	rk := &Ranker{cfg: cfg.WithDefaults(), dense: dense, lexical: lexical, serverOf: serverOf, companions: companions,
		scratch: &sync.Pool{New: func() any { return newScratch(n, servers) }}}
	rk.serverStart = make([]int32, servers+1)
	for _, v := range serverOf {
		rk.serverStart[v+1]++
	}
	for v := range servers {
		rk.serverStart[v+1] += rk.serverStart[v]
	}
	rk.byServer = make([]int32, len(serverOf))
	next := slices.Clone(rk.serverStart[:servers])
	for row, v := range serverOf {
		rk.byServer[next[v]] = int32(row)
		next[v]++
	}
	return rk
}

// serverRows returns the rows of server v.
func (rk *Ranker) serverRows(v int32) []int32 {
	return rk.byServer[rk.serverStart[v]:rk.serverStart[v+1]]
}

// Config is the ranker's configuration, defaults filled in.
func (rk *Ranker) Config() Config { return rk.cfg }

// Query is one query as every ranker needs it: its text (for sentences),
// its BM25 form (which Semantic does not read), and its dense vector (nil:
// no dense evidence).
type Query struct {
	Text    string
	Lexical bm25.Query
	// Fixes are how Lexical's terms read the text's misspellings
	// (bm25.Index.Correct); each sentence ranked apart reads them so too.
	Fixes []bm25.Fix
	Dense *index.Query
	// Ranks asks for each ranker's rank of every result (explain).
	Ranks bool
}

// Semantic ranks by cosine alone: the k best rows kept by keep.
func (rk *Ranker) Semantic(ctx context.Context, q Query, k int, keep func(int) bool) ([]Result, error) {
	return rk.AppendSemantic(ctx, nil, q, k, keep)
}

// AppendSemantic is Semantic appending its results to dst.
func (rk *Ranker) AppendSemantic(ctx context.Context, dst []Result, q Query, k int, keep func(int) bool) ([]Result, error) {
	if q.Dense == nil { // nothing in the query the embedder knows: no evidence
		return dst, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	matches, err := rk.dense.Candidates(*q.Dense, k, keep)
	if err != nil {
		return nil, err
	}
	out := slices.Grow(dst, len(matches))
	for i, m := range matches {
		out = append(out, Result{Row: m.Row, Dense: m.Score, DenseRank: i + 1, Fused: m.Score})
	}
	return out, nil
}

// Keyword ranks by BM25 alone: the k best rows kept by keep.
func (rk *Ranker) Keyword(ctx context.Context, q Query, k int, keep func(int) bool) ([]Result, error) {
	return rk.AppendKeyword(ctx, nil, q, k, keep)
}

// AppendKeyword is Keyword appending its results to dst.
func (rk *Ranker) AppendKeyword(ctx context.Context, dst []Result, q Query, k int, keep func(int) bool) ([]Result, error) {
	matches, err := q.Lexical.Search(ctx, k, keep)
	if err != nil {
		return nil, err
	}
	out := slices.Grow(dst, len(matches))
	for i, m := range matches {
		out = append(out, Result{Row: m.Row, Lex: m.Score, LexRank: i + 1, Fused: m.Score})
	}
	return out, nil
}

// Result is one tool's standing in each ranker, for fusion and explain.
type Result struct {
	Row                int
	Dense, Lex         float32 // raw scores: cosine, BM25 (blended with sentences)
	DenseRank, LexRank int     // 1-based; 0 when not in that ranking
	Fused              float32
	// Companion is the gain from being a learned companion of one of the
	// best tools (0: none), before the division that keeps scores in [0,1].
	Companion float32
}

// Hybrid fuses the dense ranking of q (none: no dense evidence) with its
// BM25 ranking and returns the k best rows kept by keep. Both rankers score every
// tool into a vector once; candidates are the dense top few and every tool
// with a lexical match. Beyond plain fusion, each measured to pay on the
// shared eval sets:
//
//   - Multi-intent queries ("find X. Also recommend Y", "get X, then do
//     Y") rank each intent too (intents), and a tool keeps its best
//     intent's normalised score, blended with the whole query's by
//     SentenceWeight, so every intent gets its own strong matches.
//   - The tools of the servers behind the best candidates all become
//     candidates, and every tool's score is scaled by 1 + SiblingBoost
//     times its server's best fused score: a request that needs one
//     endpoint of an API often needs its neighbours, and MCP catalogs group
//     tools by server. The gain is proportional to the tool's own score,
//     so a large server's unrelated tools do not crowd out another
//     server's good match (an additive boost did: evals/README.md).
//   - Each intent's best lexical match that the fused top k lacks takes
//     one of its last places (at most intentShare of them): a request for
//     three tools from three servers gets all three, however strongly one
//     server dominates the fused scores.
func (rk *Ranker) Hybrid(ctx context.Context, query Query, k int, keep func(int) bool) ([]Result, error) {
	return rk.AppendHybrid(ctx, nil, query, k, keep)
}

// AppendHybrid is Hybrid appending its results to dst, for a caller that
// reuses it (as AppendSemantic and AppendKeyword are for theirs).
func (rk *Ranker) AppendHybrid(ctx context.Context, dst []Result, query Query, k int, keep func(int) bool) ([]Result, error) {
	cfg, q := &rk.cfg, query.Dense
	n := rk.lexical.Len()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	sc := rk.scratch.Get().(*scratch)
	defer rk.scratch.Put(sc)
	sc.reset()
	dense, denseRank, member := sc.dense, sc.denseRank, sc.member
	ranks := cfg.Fusion == FusionRRF || query.Ranks // are dense ranks shown or used?
	if q == nil {
		clear(dense) // no dense evidence: every candidate's cosine is 0
	}
	mx := rk.dense
	// A binary index scores only its dense candidates; every other
	// candidate gets its exact cosine as it joins. But when the codes'
	// pass and so many joining cosines one by one cost more than every
	// row's at once (most tools join a broad query of a large catalog;
	// a small catalog's rows cost less than rescoring), every row is
	// scored exactly instead, and the dense candidates are the exact ones.
	// A sketch's estimates are all it has: every row's at once is cheaper
	// than one by one, each of which reads the whole query again.
	lex := rk.lexicalScores(query, sc, keep)
	lazy := q != nil && mx.Quantization() == index.QuantBinary && !rk.scanJoins(*q, lex, keep)
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
		} else {
			// Every kept tool is among the dense top few, and the order
			// among them matters to nothing but ranks: no selection needed.
			for row := range n {
				if keep == nil || keep(row) {
					member[row] = true
				}
			}
		}
	}
	// Candidates are collected in row order (TopK then breaks ties by
	// position, so the earlier tool wins, as in the single rankings).
	for row, s := range lex {
		if s > 0 && (keep == nil || keep(row)) {
			join(row)
		}
	}
	// A candidate is its row; its scores stay in the per-tool vectors, and
	// a Result is made only for the answer's few.
	cands := sc.collect()
	rrf := cfg.Fusion == FusionRRF
	if rrf {
		sc.lexRanks(cands)
	}
	rk.fuse(cands, sc)
	fused := sc.fused
	if cfg.SiblingBoost > 0 && len(cands) > 0 {
		sc.top = index.TopKInto(sc.top, sc.gather(cands), siblingServers, nil)
		grew := false
		for _, m := range sc.top {
			for _, row := range rk.serverRows(rk.serverOf[cands[m.Row]]) {
				if !member[row] && (keep == nil || keep(int(row))) {
					join(int(row))
					grew = true
				}
			}
		}
		if grew {
			cands = sc.collect()
			if rrf {
				sc.lexRanks(cands)
			}
			rk.fuse(cands, sc)
		}
		// Each server's best fused score, kept in a register while its
		// tools come one after another, as a catalog lists them.
		best := sc.serverBest
		cur, top := int32(-1), float32(0)
		for _, row := range cands {
			if sv := rk.serverOf[row]; sv != cur {
				if cur >= 0 {
					best[cur] = top
				}
				cur, top = sv, best[sv]
			}
			top = max(top, fused[row])
		}
		best[cur] = top
		// Divided by 1+boost, a hybrid score stays in [0,1]: 1 is the best
		// dense and lexical match in the best server.
		beta := float32(cfg.SiblingBoost)
		for _, row := range cands {
			fused[row] = fused[row] * (1 + beta*best[rk.serverOf[row]]) / (1 + beta)
		}
	}
	companions := rk.companions != nil && cfg.CompanionBoost > 0 && len(cands) > 0
	if companions {
		cands = rk.boostCompanions(cands, sc, keep)
	}
	top := reserve(cands, sc.gather(cands), k, sc)
	if ranks && !rrf {
		// Only explain shows lexical ranks here, and only the answer's.
		rows := sc.answer[:0]
		for _, m := range top {
			rows = append(rows, cands[m.Row])
		}
		sc.answer = rows
		sc.lexRanksOf(cands, rows)
	}
	out := slices.Grow(dst, len(top)) // outlives the scratch
	for _, m := range top {
		row := cands[m.Row]
		out = append(out, Result{Row: int(row), Fused: fused[row]})
		r := &out[len(out)-1]
		if member[row] { // not a companion that joined by its gain alone
			r.Dense, r.Lex, r.DenseRank = dense[row], lex[row], int(denseRank[row])
			if ranks {
				r.LexRank = int(sc.lexRank[row])
			}
		}
		if companions {
			r.Companion = sc.companion[row]
		}
	}
	return out, nil
}

// scanJoins reports whether scoring every row exactly costs less than a
// binary index's pass over its codes and, one by one, the cosines of the
// lexical candidates that would join its dense candidates.
func (rk *Ranker) scanJoins(q index.Query, lex []float32, keep func(int) bool) bool {
	mx := rk.dense
	spare := mx.ExactCost(q) - mx.ScanCost(q)
	if spare <= 0 {
		return true
	}
	limit := int(spare/max(mx.DotCost(q), 1)) + 1
	joins := 0
	for row, s := range lex {
		if s > 0 && (keep == nil || keep(row)) {
			if joins++; joins >= limit {
				return true
			}
		}
	}
	return false
}

// nsFused is about the CPU time hybrid ranking takes for each candidate
// beyond scoring it: collecting, fusing, boosting and selecting.
const nsFused = 25

// nsIntentTool is about the CPU time each intent ranked apart takes for
// each tool beyond its postings: its scores cleared, searched for their
// best, normalised and blended (lexicalScores). At 100,000 generated
// tools, 16 intents of distinct words took about 6.4 ns a tool each
// beyond their postings (BenchmarkSearchCost: 16-intents against
// 100-words), 16 of the same few common words about 9.2 (BENCHMARKS.md:
// 19 ms against 3.7).
const nsIntentTool = 8

// intentsCostFrom is the catalog size from which Cost finds a query's
// intents (70 ns a query): below it, 16 intents cost under a millisecond.
const intentsCostFrom = int(time.Millisecond / (MaxIntents * nsIntentTool))

// Cost is about the CPU time of ranking q, on the machine of
// BENCHMARKS.md ("What a search costs"): its dense side when it has one,
// its lexical side when it has terms, and for a hybrid ranking (hybrid)
// the fusion of their candidates, at most every tool a term of q names.
// A broad query costs several times a short one: it reads most of the
// index's columns and fuses every tool; so does a hybrid query of many
// intents, each a keyword ranking of every tool (Intents).
func (rk *Ranker) Cost(q Query, hybrid bool) time.Duration {
	mx := rk.dense
	posts := q.Lexical.Postings()
	var c, lexCost time.Duration
	if posts > 0 {
		lexCost = q.Lexical.ScoreCost()
		c += lexCost
	}
	cands := min(posts, rk.lexical.Len())
	if q.Dense != nil {
		if d := *q.Dense; hybrid && mx.Quantization() == index.QuantBinary {
			// The codes' pass and the lexical candidates' cosines one by
			// one, or every row's instead when that is cheaper (scanJoins).
			c += min(mx.ScanCost(d)+time.Duration(cands)*mx.DotCost(d), mx.ExactCost(d))
		} else {
			c += mx.ScanCost(d)
		}
	}
	if hybrid && posts > 0 {
		c += time.Duration(cands * nsFused)
		if tools := rk.lexical.Len(); tools >= intentsCostFrom {
			if n := rk.Intents(q.Text); n > 0 {
				// Between them, the intents' terms are about the whole
				// query's, each intent a pass over every tool.
				c += lexCost + time.Duration(float64(n*tools)*nsIntentTool)
			}
		}
	}
	return c
}

// boostCompanions gives each candidate, and each tool learned as used
// with one of the best tools, CompanionBoost times its strongest link to
// one of them, scaled by that tool's score; divided by 1+boost, scores
// stay in [0,1]. A companion that was no candidate joins with that gain
// alone.
func (rk *Ranker) boostCompanions(cands []int32, sc *scratch, keep func(int) bool) []int32 {
	beta := float32(rk.cfg.CompanionBoost)
	if sc.companion == nil {
		sc.companion = make([]float32, len(sc.fused))
	}
	fused, companion := sc.fused, sc.companion
	gain := map[int32]float32{}
	for _, m := range index.TopK(sc.gather(cands), companionAnchors, nil) {
		anchor := cands[m.Row]
		for _, c := range rk.companions[anchor] {
			if g := fused[anchor] * c.Strength; g > gain[c.Row] && (keep == nil || keep(int(c.Row))) {
				gain[c.Row] = g
			}
		}
	}
	if len(gain) == 0 {
		for _, row := range cands {
			companion[row] = 0
		}
		return cands
	}
	for _, row := range cands {
		companion[row] = beta * gain[row]
		fused[row] = (fused[row] + companion[row]) / (1 + beta)
		delete(gain, row)
	}
	for _, row := range slices.Sorted(maps.Keys(gain)) { // in row order, as every candidate
		companion[row] = beta * gain[row]
		fused[row] = companion[row] / (1 + beta)
		cands = append(cands, row)
	}
	sc.cands = cands
	return cands
}

// reserve returns the k best candidates by score, as positions in cands,
// except that each intent's best row (sc.intentBest, -1: none) missing
// from them displaces the last of the fused picks, up to intentShare of
// k. The answer stays in score order and lives in sc.
func reserve(cands []int32, scores []float32, k int, sc *scratch) []index.Match {
	intentBest := sc.intentBest
	top := index.TopKInto(sc.top, scores, k, nil)
	if places := min(len(intentBest), int(intentShare*float64(k))); len(intentBest) > 1 && places > 0 && len(top) == k {
		in := func(row int) bool {
			return slices.ContainsFunc(top, func(m index.Match) bool { return int(cands[m.Row]) == row })
		}
		var want []int
		for _, row := range intentBest {
			if row >= 0 && !in(row) && !slices.Contains(want, row) {
				want = append(want, row)
			}
		}
		if want = want[:min(len(want), places)]; len(want) > 0 {
			top = top[:k-len(want)]
			for i, row := range cands {
				if slices.Contains(want, int(row)) {
					top = append(top, index.Match{Row: i, Score: scores[i]})
				}
			}
			slices.SortStableFunc(top, func(a, b index.Match) int { return cmp.Compare(b.Score, a.Score) })
		}
	}
	sc.top = top
	return top
}

// scratch is the working memory of one hybrid query, pooled per ranker
// (its sizes are the catalog's), so that a query allocates little more
// than its answer.
type scratch struct {
	dense, lex, fused, best, part, tmp []float32 // per tool; tmp is per candidate
	companion                          []float32 // per tool, made when companions boost
	denseRank, lexRank                 []int32   // per tool
	member                             []bool
	serverBest                         []float32 // per server
	cands, order                       []int32   // candidate rows; lexRanks' order
	answer, before                     []int32   // lexRanksOf's rows and counts
	intentBest                         []int     // per intent of a multi-intent query: its best lexical row, or -1
	intents                            []string
	top                                []index.Match // a selection's, reused
}

func newScratch(tools, servers int) *scratch {
	return &scratch{
		dense: make([]float32, tools), lex: make([]float32, tools), fused: make([]float32, tools),
		best: make([]float32, tools), part: make([]float32, tools),
		denseRank: make([]int32, tools), lexRank: make([]int32, tools), member: make([]bool, tools),
		serverBest: make([]float32, servers),
	}
}

// reset zeroes what hybrid reads before writing; the score vectors are
// overwritten whole by their rankers, and a candidate's fused score and
// ranks are written before they are read.
func (sc *scratch) reset() {
	clear(sc.denseRank)
	clear(sc.member)
	clear(sc.serverBest)
}

// collect returns the candidates, the member rows in row order.
func (sc *scratch) collect() []int32 {
	out := sc.cands[:0]
	for row, in := range sc.member {
		if in {
			out = append(out, int32(row))
		}
	}
	sc.cands = out
	return out
}

// gather returns the candidates' fused scores, by position.
func (sc *scratch) gather(cands []int32) []float32 {
	out := sc.floats(len(cands))
	for i, row := range cands {
		out[i] = sc.fused[row]
	}
	return out
}

// floats returns n scratch floats, reusing one buffer: each use ends before
// the next begins.
func (sc *scratch) floats(n int) []float32 {
	if cap(sc.tmp) < n {
		sc.tmp = make([]float32, n)
	}
	return sc.tmp[:n]
}

// Intents is how many of text's intents a hybrid ranking ranks apart by
// keyword (lexicalScores): none for a text of one, or with the blend off;
// at most MaxIntents. Each costs a keyword ranking of every tool.
func (rk *Ranker) Intents(text string) int {
	if rk.cfg.SentenceWeight <= 0 {
		return 0
	}
	var buf [4]string // most texts: no allocation
	n := len(intents(text, buf[:0]))
	if n < 2 {
		return 0
	}
	return min(n, MaxIntents)
}

// lexicalScores is the BM25 side, one score per tool: the whole query's,
// blended with the tool's best per-intent score when the query has
// several intents (each normalised to [0,1] when blended). The scores, and
// each intent's best row kept by keep, live in sc.
func (rk *Ranker) lexicalScores(q Query, sc *scratch, keep func(int) bool) []float32 {
	whole := sc.lex
	q.Lexical.ScoresInto(whole)
	sc.intentBest = sc.intentBest[:0]
	g := float32(rk.cfg.SentenceWeight)
	if g <= 0 {
		return whole
	}
	sents := intents(q.Text, sc.intents[:0])
	sc.intents = sents
	if len(sents) < 2 {
		return whole
	}
	// The last: a long text puts its ask at the end, and a digest keeps it.
	sents = sents[max(0, len(sents)-MaxIntents):]
	var top float32
	for _, s := range whole {
		top = max(top, s)
	}
	if top <= 0 {
		return whole
	}
	for i := range whole {
		whole[i] = (1 - g) * whole[i] / top
	}
	best, part := sc.best, sc.part
	clear(best)
	for _, st := range sents {
		rk.lexical.Prepare(st, q.Fixes).ScoresInto(part)
		// One pass finds the intent's top score (to normalise by) and its
		// best row the caller keeps; the earlier row wins a tie, as in TopK.
		var m float32
		bestRow := -1
		for row, s := range part {
			m = max(m, s)
			if s > 0 && (bestRow < 0 || s > part[bestRow]) && (keep == nil || keep(row)) {
				bestRow = row
			}
		}
		sc.intentBest = append(sc.intentBest, bestRow)
		if m > 0 {
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

// lexRanks sets each candidate's rank among those with a lexical score
// (0: none), for reciprocal-rank fusion and explain.
func (sc *scratch) lexRanks(cands []int32) {
	for rank, row := range sc.lexOrder(cands) {
		sc.lexRank[row] = int32(rank + 1)
	}
}

// lexOrder clears the lexical rank of rows and returns, in sc.order,
// those with a lexical score in the order of lexical ranks (byLex).
func (sc *scratch) lexOrder(rows []int32) []int32 {
	order := sc.order[:0]
	for _, row := range rows {
		sc.lexRank[row] = 0
		if sc.lex[row] > 0 {
			order = append(order, row)
		}
	}
	slices.SortFunc(order, sc.byLex)
	sc.order = order
	return order
}

// byLex orders rows by lexical score, highest first, then by row (the
// earlier tool first, as TopK breaks ties): the order of lexical ranks.
func (sc *scratch) byLex(x, y int32) int {
	return cmp.Or(cmp.Compare(sc.lex[y], sc.lex[x]), cmp.Compare(x, y))
}

// lexRanksOf sets the rank lexRanks would give to each of rows alone,
// without sorting every candidate: at 100,000 tools that sort made an
// explained query cost four times a plain one.
func (sc *scratch) lexRanksOf(cands, rows []int32) {
	lex := sc.lex
	ranked := sc.lexOrder(rows)
	if len(ranked) == 0 {
		return
	}
	// before[i] counts the candidates whose first successor among ranked
	// is ranked[i]: each precedes it and every row after it.
	before := slices.Grow(sc.before[:0], len(ranked))[:len(ranked)]
	clear(before)
	sc.before = before
	last := ranked[len(ranked)-1]
	for _, c := range cands {
		if lex[c] <= 0 || sc.byLex(c, last) >= 0 {
			continue // most candidates: after every row asked
		}
		i, found := slices.BinarySearchFunc(ranked, c, sc.byLex)
		if found {
			i++ // a row asked for is not ahead of itself
		}
		before[i]++
	}
	var n int32
	for i, row := range ranked {
		n += before[i]
		sc.lexRank[row] = n + 1
	}
}

// fuse sets each candidate's fused score from its dense and lexical ones.
func (rk *Ranker) fuse(cands []int32, sc *scratch) {
	dense, lex, fused := sc.dense, sc.lex, sc.fused
	if rk.cfg.Fusion == FusionRRF {
		for _, row := range cands {
			var f float32
			if r := sc.denseRank[row]; r > 0 {
				f += 1 / float32(rrfK+int(r))
			}
			if r := sc.lexRank[row]; r > 0 {
				f += 1 / float32(rrfK+int(r))
			}
			fused[row] = f
		}
		return
	}
	alpha := float32(rk.cfg.Alpha)
	dmin, dmax := float32(math.Inf(1)), float32(math.Inf(-1))
	var lmax float32
	for _, row := range cands {
		d := dense[row]
		dmin, dmax = min(dmin, d), max(dmax, d)
		lmax = max(lmax, lex[row])
	}
	// Every candidate has the same case; zero spans give zero scores.
	spread, lexical := dmax > dmin, lmax > 0
	dense, lex = dense[:len(fused)], lex[:len(fused)] // one bounds check a row
	for _, row := range cands {
		var dn, ln float32
		if spread {
			dn = (dense[row] - dmin) / (dmax - dmin)
		}
		if lexical {
			ln = lex[row] / lmax
		}
		fused[row] = alpha*dn + (1-alpha)*ln
	}
}

// clauseJoints are where one sentence often joins two requests: "find X,
// and then do Y". Longer joints come first, so "and then" is one joint.
var clauseJoints = []string{", and then ", " and then ", ", then ", ", and also ", ", and ", ", also ", ", plus ", " as well as ", ", additionally "}

// commaless are the clause joints without a comma: a text with no comma
// can have only these.
var commaless = slices.DeleteFunc(slices.Clone(clauseJoints), func(j string) bool { return strings.Contains(j, ",") })

// intents appends to dst the requests text makes: its sentences, each
// cut again at clause joints, keeping pieces of three or more words.
func intents(text string, dst []string) []string {
	out := sentences(text, dst)
	if strings.IndexByte(text, ',') < 0 && !slices.ContainsFunc(commaless, func(j string) bool { return strings.Contains(text, j) }) {
		return out // most texts: no joint at all
	}
	for _, joint := range clauseJoints {
		if !strings.Contains(text, joint) {
			continue // the common case: no sentence has it
		}
		var next []string
		for _, p := range out[len(dst):] {
			for part := range strings.SplitSeq(p, joint) {
				if hasWords(part, 3) {
					next = append(next, part)
				}
			}
		}
		out = append(out[:len(dst)], next...)
	}
	return out
}

// sentences appends to dst text's sentences, split at sentence ends,
// keeping pieces of three or more words. A full stop not followed by a
// space ("e.g", "3.5", "example.com") does not end a sentence.
func sentences(text string, dst []string) []string {
	out := dst
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
