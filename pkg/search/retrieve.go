package search

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/toolsearch/toolsearch/pkg/access"
	"github.com/toolsearch/toolsearch/pkg/analysis"
	"github.com/toolsearch/toolsearch/pkg/bm25"
	"github.com/toolsearch/toolsearch/pkg/embedding"
	"github.com/toolsearch/toolsearch/pkg/index"
	"github.com/toolsearch/toolsearch/pkg/rank"
)

// retrieve ranks the tools the caller may see, within scope and holding
// every required term: by hybrid (dense and BM25 fused) ranking by
// default, by either alone on request, and by BM25 whenever the dense side
// cannot answer. It fails only when ctx is done: the caller left, which is
// no reason to blame the provider.
func (a *answer) retrieve(ctx context.Context, pq parsedQuery) error {
	if len(pq.required) > 0 {
		a.resp.Required = make([]string, len(pq.required))
		for i, t := range pq.required {
			a.resp.Required[i] = echoed(t)
		}
	}
	tools := a.snap.Catalog.Tools()
	// No keep function when every row is in scope: rankers then skip a
	// call per row and candidate.
	var keep func(row int) bool
	if !a.unfiltered() || len(pq.required) > 0 {
		var required termMatcher
		keep = func(row int) bool {
			if !a.inScope(row) {
				return false
			}
			for _, term := range pq.required {
				if !required.holds(&tools[row], term) {
					return false
				}
			}
			return true
		}
	}
	k := a.req.topK()
	mode := a.req.Mode
	if mode == "" {
		mode = ModeHybrid
	}
	if mode != ModeKeyword && !a.snap.Semantic() {
		reason := "no_index"
		if a.snap.dropped {
			reason = dropReason
		}
		a.degrade(reason)
		mode = ModeKeyword
	} else if mode != ModeKeyword && a.snap.dropped {
		a.degrade(sketchReason) // its cosines are estimates (makeRoom)
	}
	w := works.Get().(*work)
	defer w.release(a)
	// The query is analysed once, its misspellings of the catalog's words
	// corrected; every ranker, the rating and explain read this one form
	// of it.
	//
	// A conversation's ask (its newest user turn) and the earlier turns'
	// words are analysed apart, in that order, so the query's first asked
	// terms are the ask's; the earlier turns' weigh contextWeight (see
	// there). Its intents are the ask's alone.
	ask, earlier := pq.parts()
	terms := analysis.English.AppendTerms(w.terms[:0], ask)
	asked := len(terms)
	terms = analysis.English.AppendTerms(terms, earlier)
	weight := contextWeight(asked)
	w.terms = terms
	w.fixes = a.snap.Keywords.Correct(terms, w.fixes[:0])
	q := rank.Query{Text: ask, Fixes: w.fixes, Ranks: a.req.Explain}
	if mode != ModeKeyword {
		var err error
		q.Dense, err = a.embedQuery(ctx, pq, terms, asked, weight, w)
		switch {
		case err != nil && ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, errProviderFailing):
			// Not asked: status keeps the failure that opened the breaker.
			a.degrade(providerFailingReason)
			mode = ModeKeyword
		case err != nil:
			a.degrade(embedding.Reason(err))
			a.s.recordQueryError(err.Error())
			mode = ModeKeyword
		}
	}
	if mode != ModeSemantic || a.req.Explain {
		// BM25 ranks, rates or explains: a plain semantic answer needs none.
		q.Lexical = a.snap.Keywords.PrepareTermsInto(w.lexical, terms[:asked])
		if asked < len(terms) {
			q.Lexical = q.Lexical.With(a.snap.Keywords.PrepareTerms(terms[asked:]), weight)
		}
		w.lexical = q.Lexical
	}
	rk := a.snap.ranker
	// The request paid a unit; a search that costs more (UnitCost) pays
	// the rest before it is done: a query of hundreds of words read 30
	// million values of 100,000 local vectors, a provider's dense query
	// 150 million, for four to six units' CPU; 16 intents ranked apart
	// passed over every tool 16 times more.
	cq := q
	if mode == ModeSemantic {
		cq.Lexical = bm25.Query{} // explain reads only the answer's rows
	}
	if err := access.Spend(ctx, access.WorkScan, scanUnits(rk.Cost(cq, mode == ModeHybrid))); err != nil {
		return err
	}
	var results []rank.Result
	var err error
	switch mode {
	case ModeHybrid:
		results, err = rk.AppendHybrid(ctx, w.results[:0], q, k, keep)
	case ModeSemantic:
		results, err = rk.AppendSemantic(ctx, w.results[:0], q, k, keep)
	default:
		results, err = rk.AppendKeyword(ctx, w.results[:0], q, k, keep)
	}
	if results != nil {
		w.results = results
	}
	if err != nil {
		return err
	}
	a.resp.Mode = mode
	a.confidence(results, q, mode)
	// One allocation for the hits, core tools included, instead of one
	// per hit and growth by doubling; their scores are the answer's own
	// unless k is unusually large.
	a.resp.Tools = slices.Grow(a.resp.Tools, len(results)+len(a.snap.policy.core))
	scores := a.scores[:]
	if len(results) > len(scores) {
		scores = make([]float32, len(results))
	}
	for i, r := range results {
		if a.req.MinScore != nil && float64(r.Fused) < *a.req.MinScore {
			continue
		}
		scores[i] = r.Fused
		a.seen.add(r.Row)
		h := a.hit(r.Row, Source(mode), &scores[i])
		if a.req.Explain {
			h.Explain = explain(r, q, mode)
		}
		a.resp.Tools = append(a.resp.Tools, h)
	}
	if a.s.learner != nil {
		// A conversation teaches the words it asked at full weight: its
		// newest turn's, and the earlier turns' only when that turn was
		// too short to weigh them less (a status set after a talk of
		// failed CI runs is no tool for CI runs).
		taught := terms
		if weight < 1 {
			taught = terms[:asked]
		}
		a.resp.SearchID = a.s.learner.remember(a.caller, a.snap, taught, a.resp.Tools, w)
	}
	return nil
}

// scanUnits is how many units beyond its request's a search of cost c
// pays: none up to UnitCost, then one for each UnitCost begun.
func scanUnits(c time.Duration) int {
	return max(0, int((c+UnitCost-1)/UnitCost)-1)
}

// work is a retrieval's working memory: the query's terms, its sparse
// embedding, its BM25 terms and the ranked results. None of it outlives
// the answer made from it (hits copy what they show; learning copies the
// terms it keeps), so it is pooled instead of allocated a search.
type work struct {
	terms   []string
	idx     []int32
	val     []float32
	earlier index.Sparse // a conversation's earlier words' sparse embedding
	sum     index.Sparse // and the query's, the ask's plus those
	lexical bm25.Query
	fixes   []bm25.Fix // the query's misspellings, as Correct read them
	results []rank.Result
	kept    []string // learning's: the terms a search may teach
	record  []byte   // and what it remembers of the answer
}

var works = sync.Pool{New: func() any { return new(work) }}

// release returns w to the pool once a is made; a no longer points into it.
func (w *work) release(a *answer) {
	a.query = index.Query{}
	works.Put(w)
}

// confidence rates the best result on an absolute scale: its cosine
// (semantic), its share of the query's attainable BM25 score (keyword), or
// their blend (hybrid); and compares it with the mode's threshold.
func (a *answer) confidence(results []rank.Result, q rank.Query, mode Mode) {
	var c float32
	if len(results) > 0 {
		top := results[0]
		lex := func() float32 { return q.Lexical.Fraction(top.Row) }
		switch alpha := float32(a.s.cfg.Rank.Alpha); mode {
		case ModeSemantic:
			c = top.Dense
		case ModeKeyword:
			c = lex()
		default:
			c = alpha*top.Dense + (1-alpha)*lex()
		}
	}
	// Two thresholds, two questions: is the best tool likely right
	// (Confidence), and is the tool the query needs likely absent
	// (NoMatch)? An answer flagged no_match is never also called
	// confident, whichever threshold is higher.
	noMatch := float64(c) < a.s.cfg.NoMatch[mode]
	a.conf, a.confident = c, float64(c) >= a.s.cfg.Confidence[mode] && !noMatch
	a.resp.Confidence, a.resp.Confident, a.resp.NoMatch = &a.conf, &a.confident, noMatch
}

// DegradedReasons are every diagnostic.embedding_reason a degraded answer
// may give: no_index, dropReason, sketchReason, providerFailingReason and
// embedding.Reason's.
func DegradedReasons() []string {
	return append([]string{"no_index", dropReason, sketchReason, providerFailingReason}, embedding.Reasons...)
}

// reasonText is what a caller is told of each embedding failure reason
// (DegradedReasons).
var reasonText = map[string]string{
	"no_index":            "the semantic index is not built (the embedding provider failed at build); ranked by keywords",
	dropReason:            "the semantic index is being rebuilt, and the memory limit cannot hold it beside the new one; ranked by keywords until the rebuild ends",
	sketchReason:          "the semantic index is being rebuilt, and the memory limit cannot hold it beside the new one; its semantic scores are estimated from sign codes until the rebuild ends",
	providerFailingReason: "the embedding provider failed the queries before this one, so it was not asked; ranked by keywords until it answers again",
	"timeout":             "the embedding provider did not answer in time; ranked by keywords",
	"rate_limited":        "the embedding provider is rate-limiting; ranked by keywords",
	"server_error":        "the embedding provider failed (a server error); ranked by keywords",
	"client_error":        "the embedding provider refused the request; ranked by keywords",
	"network":             "the embedding provider could not be reached; ranked by keywords",
	"bad_response":        "the embedding provider answered with something unusable; ranked by keywords",
	"canceled":            "the query's embedding was cancelled; ranked by keywords",
	"other":               "the query could not be embedded; ranked by keywords",
}

// explain says why a tool ranked where it did.
func explain(r rank.Result, q rank.Query, mode Mode) *Explanation {
	e := &Explanation{MatchedTerms: q.Lexical.Matched(r.Row)}
	if mode != ModeKeyword && q.Dense != nil {
		e.Semantic = &RankScore{Rank: r.DenseRank, Score: r.Dense}
	}
	if mode != ModeSemantic {
		e.Keyword = &RankScore{Rank: r.LexRank, Score: r.Lex}
	}
	e.Companion = r.Companion
	return e
}

// degrade marks the answer keyword-ranked for reason. The caller reads
// the reason and a fixed sentence for it, never the provider's own text:
// that names the provider's address, may quote another caller's query,
// and can carry the provider key in forms no redaction foresees. The
// detail is the operator's, in the admin status and the log.
func (a *answer) degrade(reason string) {
	a.resp.Degraded = true
	if a.resp.Diagnostic == nil {
		a.resp.Diagnostic = &Diagnostic{}
	}
	a.resp.Diagnostic.EmbeddingError, a.resp.Diagnostic.EmbeddingReason = reasonText[reason], reason
	if a.resp.Diagnostic.EmbeddingError == "" {
		a.resp.Diagnostic.EmbeddingError = reasonText["other"]
	}
	a.s.metrics.fallbacks.WithLabelValues(reason).Inc()
}

// embedQuery embeds the query within the query timeout and normalises it:
// its text, or a conversation's ask and earlier turns' words, each a unit
// vector, the second's scaled by weight. terms are the query's, the first
// asked of them the ask's. It returns nil, without error, when
// the query has nothing the embedder recognises (a zero vector carries no
// evidence).
func (a *answer) embedQuery(ctx context.Context, pq parsedQuery, terms []string, asked int, weight float64, w *work) (*index.Query, error) {
	if sp, ok := a.snap.query.(sparseEmbedder); ok {
		return a.sparseQuery(sp, terms, asked, weight, w), nil
	}
	parts := []string{pq.text}
	if ask, earlier := pq.parts(); earlier != "" {
		parts = []string{ask, earlier}
	}
	var q []float32
	var err error
	if c := a.s.queries; c != nil {
		q, err = c.embed(ctx, a.s, a.snap.query, a.caller.Key, parts, weight, a.s.cfg.QueryTimeout)
	} else {
		qctx, cancel := context.WithTimeout(ctx, a.s.cfg.QueryTimeout)
		defer cancel()
		q, err = a.s.embedQueryText(qctx, a.snap.query, parts, weight)
	}
	if err == nil && len(q) != a.snap.Matrix.Dim() {
		// The provider no longer answers at the index's width: this query
		// falls back, and the next build must not reuse the cached vectors.
		a.s.distrust.Store(true)
		err = fmt.Errorf("%w: query vector has dimension %d, the index %d; rebuild to re-embed the catalog", embedding.ErrBadResponse, len(q), a.snap.Matrix.Dim())
	}
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			err = fmt.Errorf("query embedding took longer than %s: %w", a.s.cfg.QueryTimeout, err)
		}
		return nil, err
	}
	if index.Normalize(q) == 0 {
		return nil, nil
	}
	a.query = index.Query{Dense: q}
	return &a.query, nil
}

// combine is a query's vector from its parts' (embedQueryText): the one,
// or the first's unit vector plus weight times the second's. Vectors of
// two widths are left to the caller's check of the width.
func combine(vecs [][]float32, weight float64) []float32 {
	v := vecs[0]
	if len(vecs) == 1 || len(vecs[1]) != len(v) {
		return v
	}
	index.Normalize(v)
	index.Normalize(vecs[1])
	for i, x := range vecs[1] {
		v[i] += float32(weight) * x
	}
	return v
}

// sparseQuery embeds a query in-process (the local embedder): no timeout
// and no cache. Such a query writes tens of the index's columns; it stays
// sparse unless the index is too large for a sparse product to pay (see
// index.Matrix.PreferSparse).
func (a *answer) sparseQuery(sp sparseEmbedder, terms []string, asked int, weight float64, w *work) *index.Query {
	idx, val := sp.AppendSparseTerms(w.idx[:0], w.val[:0], terms[:asked])
	w.idx, w.val = idx, val
	if asked < len(terms) {
		index.Normalize(val)
		earlier := &w.earlier
		earlier.Idx, earlier.Val = sp.AppendSparseTerms(earlier.Idx[:0], earlier.Val[:0], terms[asked:])
		index.Normalize(earlier.Val)
		w.sum = index.AddSparse(index.Sparse{Idx: w.sum.Idx[:0], Val: w.sum.Val[:0]}, index.Sparse{Idx: idx, Val: val}, *earlier, float32(weight))
		idx, val = w.sum.Idx, w.sum.Val
	}
	a.s.metrics.embedding("query", nil)
	if len(val) == 0 || index.Normalize(val) == 0 {
		return nil
	}
	mx := a.snap.Matrix
	if mx.Quantization() == index.QuantNone && !mx.PreferSparse(len(idx)) {
		dense := make([]float32, mx.Dim())
		for i, j := range idx {
			dense[j] = val[i]
		}
		a.query = index.Query{Dense: dense}
	} else {
		a.query = index.Query{Sparse: index.Sparse{Idx: idx, Val: val}}
	}
	return &a.query
}
