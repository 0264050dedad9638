package search

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/toolsearch/toolsearch/pkg/analysis"
	"github.com/toolsearch/toolsearch/pkg/bm25"
	"github.com/toolsearch/toolsearch/pkg/catalog"
	"github.com/toolsearch/toolsearch/pkg/embedding"
	"github.com/toolsearch/toolsearch/pkg/index"
	"github.com/toolsearch/toolsearch/pkg/tooldef"
)

// answer is one search in progress, against one snapshot.
type answer struct {
	s      *Service
	snap   *Snapshot
	req    *Request
	caller Caller
	vis    visSet
	resp   *Response
	seen   rowSet      // rows already in the answer
	kwq    *bm25.Query // the query prepared for BM25, once per answer
	qterms []string    // the query's terms, split once for both rankers
}

// terms is the query text's analysed terms; text is the same for the
// whole answer.
func (a *answer) terms(text string) []string {
	if a.qterms == nil {
		a.qterms = analysis.English.Terms(text)
	}
	return a.qterms
}

// keywords is the query text prepared for BM25 ranking, rating and
// explaining.
func (a *answer) keywords(text string) bm25.Query {
	if a.kwq == nil {
		q := a.snap.Keywords.PrepareTerms(a.terms(text))
		a.kwq = &q
	}
	return *a.kwq
}

// Search answers req for caller from the current snapshot, through the
// caller's view of it: tools the caller's key cannot see are not in the
// view, so they answer exactly as tools that do not exist. Errors are
// ErrNotReady, ErrUnauthorized, *RequestError or *UnknownTemplateError; a
// failing embedding provider is not an error (the answer is keyword-ranked
// and says so).
func (s *Service) Search(ctx context.Context, req Request, caller Caller) (*Response, error) {
	start := time.Now()
	snap := s.cur.Load() // one load: the whole answer comes from this snapshot
	if snap == nil {
		return nil, ErrNotReady
	}
	if err := req.Validate(); err != nil {
		return nil, err
	}
	snap, err := snap.viewFor(caller)
	if err != nil {
		return nil, err
	}
	a := &answer{s: s, snap: snap, req: &req, caller: caller, vis: visSet{all: true}, seen: newRowSet(snap.Catalog.Len()),
		resp: &Response{Tools: []Hit{}, IndexVersion: snap.Version}}
	a.narrow()
	switch q := parseQuery(req.Query); {
	case req.Template != "":
		err = a.template()
	case req.Operation == "list":
		err = a.list()
	case q.isSelect:
		a.selectTools(q.selected)
	default:
		if err = a.retrieve(ctx, q); err != nil {
			return nil, err
		}
		if req.includeCore() {
			a.addRows(a.snap.policy.core, "core")
		}
	}
	if err != nil {
		return nil, err
	}
	if err := a.render(); err != nil {
		return nil, err
	}
	a.resp.TookMS = float64(time.Since(start).Microseconds()) / 1000
	s.metrics.searches.WithLabelValues(a.resp.Mode, strconv.FormatBool(a.resp.Degraded)).Inc()
	// Hits come grouped by source (retrieved, then core): one labelled
	// lookup per group rather than per hit.
	tools := a.resp.Tools
	for i := 0; i < len(tools); {
		j := i + 1
		for j < len(tools) && tools[j].Source == tools[i].Source {
			j++
		}
		s.metrics.results.WithLabelValues(tools[i].Source).Add(float64(j - i))
		i = j
	}
	return a.resp, nil
}

// narrow applies the request's own visibility, which can only narrow the
// caller's view; names the view lacks are reported as unknown.
func (a *answer) narrow() {
	if !a.req.Visibility.IsZero() {
		reqVis, unknown := a.req.Visibility.resolve(a.snap.Catalog)
		a.unknown(unknown...)
		a.vis = a.vis.and(reqVis)
	}
	for _, name := range a.req.Servers {
		if !slices.Contains(a.snap.Catalog.Servers(), name) {
			a.unknown("server " + name)
		}
	}
}

func (a *answer) unknown(names ...string) {
	if len(names) == 0 {
		return
	}
	if a.resp.Diagnostic == nil {
		a.resp.Diagnostic = &Diagnostic{}
	}
	a.resp.Diagnostic.Unknown = append(a.resp.Diagnostic.Unknown, names...)
}

func (a *answer) ambiguous(name string) {
	if a.resp.Diagnostic == nil {
		a.resp.Diagnostic = &Diagnostic{}
	}
	a.resp.Diagnostic.Ambiguous = append(a.resp.Diagnostic.Ambiguous, name)
}

// inScope reports whether row passes the request's server filters.
func (a *answer) inScope(row int) bool {
	if len(a.req.Servers) == 0 && a.req.ServerMatch == "" {
		return true // the common case, without touching the tool
	}
	t := a.snap.Catalog.Tool(row)
	if len(a.req.Servers) > 0 && !slices.Contains(a.req.Servers, t.Server) {
		return false
	}
	if m := a.req.ServerMatch; m != "" && !strings.Contains(strings.ToLower(t.Server), strings.ToLower(m)) {
		return false
	}
	return true
}

func (a *answer) hit(row int, source string, score *float32) Hit {
	t := a.snap.Catalog.Tool(row)
	return Hit{Name: t.Name, Server: t.Server, Description: t.Description, Score: score, Source: source, Row: row}
}

// addRows appends rows the caller may see, in order, skipping any already
// in the answer, and counts the rest as withheld.
func (a *answer) addRows(rows []int, source string) {
	for _, r := range rows {
		switch {
		case a.seen.has(r):
		case !a.vis.has(r):
			a.resp.Withheld++
		default:
			a.seen.add(r)
			a.resp.Tools = append(a.resp.Tools, a.hit(r, source, nil))
		}
	}
}

// template returns a workflow's tools in the manifest's order, plus core,
// with no embedding call and no ranking.
func (a *answer) template() error {
	t, ok := a.snap.policy.templates[a.req.Template]
	if !ok {
		return &UnknownTemplateError{Name: a.req.Template, Known: a.snap.policy.templateNames}
	}
	a.resp.Mode = "template"
	a.resp.Template = a.req.Template
	a.addRows(t.rows, "template")
	if a.req.includeCore() {
		a.addRows(a.snap.policy.core, "core")
	}
	return nil
}

// selectTools returns exactly the named tools, in the order named.
func (a *answer) selectTools(names []string) {
	a.resp.Mode = "select"
	for _, n := range names {
		i, err := a.snap.Catalog.Resolve(n)
		switch {
		case errors.Is(err, catalog.ErrAmbiguousTool):
			a.ambiguous(n)
			continue
		case err != nil:
			a.unknown(n)
			continue
		}
		a.addRows([]int{i}, "select")
	}
}

// list pages through the tools in scope, sorted by name then server, so
// the listing is the same on every call and every replica.
func (a *answer) list() error {
	a.resp.Mode = "list"
	var rows []int
	for i := range a.snap.Catalog.Len() {
		if a.vis.has(i) && a.inScope(i) {
			rows = append(rows, i)
		}
	}
	cat := a.snap.Catalog
	slices.SortFunc(rows, func(x, y int) int {
		tx, ty := cat.Tool(x), cat.Tool(y)
		if c := strings.Compare(tx.Name, ty.Name); c != 0 {
			return c
		}
		return strings.Compare(tx.Server, ty.Server)
	})
	key := a.snap.cursorKey(a.s.cfg.CursorKey)
	fp := scopeFingerprint(a.snap, a.req, a.caller)
	offset := 0
	if a.req.Cursor != "" {
		var err error
		if offset, err = decodeCursor(key, a.req.Cursor, fp); err != nil {
			return err
		}
	}
	end := min(offset+a.req.topK(), len(rows))
	if offset < end {
		for _, r := range rows[offset:end] {
			a.resp.Tools = append(a.resp.Tools, a.hit(r, "list", nil))
		}
	}
	total, returned := len(rows), len(a.resp.Tools)
	a.resp.Total, a.resp.Returned = &total, &returned
	if end < len(rows) {
		a.resp.NextCursor = encodeCursor(key, end, fp)
	}
	return nil
}

// retrieve ranks the tools the caller may see, within scope and holding
// every required term: by hybrid (dense and BM25 fused) ranking by
// default, by either alone on request, and by BM25 whenever the dense side
// cannot answer. It fails only when ctx is done: the caller left, which is
// no reason to blame the provider.
func (a *answer) retrieve(ctx context.Context, q parsedQuery) error {
	a.resp.Required = q.required
	keep := func(row int) bool {
		if !a.vis.has(row) || !a.inScope(row) {
			return false
		}
		for _, term := range q.required {
			if !strings.Contains(a.snap.lowered[row], term) {
				return false
			}
		}
		return true
	}
	k := a.req.topK()
	mode := a.req.Mode
	if mode == "" {
		mode = "hybrid"
	}
	if mode != "keyword" && !a.snap.Semantic() {
		a.degrade("no_index", "semantic index unavailable: "+a.snap.EmbedError)
		mode = "keyword"
	}
	var qvec *index.Query
	if mode != "keyword" {
		var err error
		qvec, err = a.embedQuery(ctx, q.text)
		switch {
		case err != nil && ctx.Err() != nil:
			return ctx.Err()
		case err != nil:
			a.degrade(embedding.Reason(err), err.Error())
			a.s.recordQueryError(err.Error())
			mode = "keyword"
		}
	}
	var results []ranked
	switch mode {
	case "hybrid":
		var err error
		if results, err = a.hybrid(ctx, qvec, q.text, k, keep); err != nil {
			return err
		}
	case "semantic":
		if qvec != nil { // nil: nothing in the query the embedder knows, so no evidence
			if err := ctx.Err(); err != nil {
				return err
			}
			matches, err := a.snap.Matrix.Candidates(*qvec, k, keep)
			if err != nil {
				return err
			}
			results = make([]ranked, 0, len(matches))
			for i, m := range matches {
				results = append(results, ranked{row: m.Row, dense: m.Score, denseRank: i + 1, fused: m.Score})
			}
		}
	default:
		matches, err := a.keywords(q.text).Search(ctx, k, keep)
		if err != nil {
			return err
		}
		results = make([]ranked, 0, len(matches))
		for i, m := range matches {
			results = append(results, ranked{row: m.Row, lex: m.Score, lexRank: i + 1, fused: m.Score})
		}
	}
	a.resp.Mode = mode
	a.confidence(results, q.text, mode)
	// One allocation for the hits and one for their scores, core tools
	// included, instead of one per hit and growth by doubling.
	a.resp.Tools = slices.Grow(a.resp.Tools, len(results)+len(a.snap.policy.core))
	scores := make([]float32, len(results))
	for i, r := range results {
		if a.req.MinScore != nil && float64(r.fused) < *a.req.MinScore {
			continue
		}
		scores[i] = r.fused
		a.seen.add(r.row)
		h := a.hit(r.row, mode, &scores[i])
		if a.req.Explain {
			h.Explain = a.explain(r, q.text, mode, qvec != nil)
		}
		a.resp.Tools = append(a.resp.Tools, h)
	}
	return nil
}

// confidence rates the best result on an absolute scale: its cosine
// (semantic), its share of the query's attainable BM25 score (keyword), or
// their blend (hybrid); and compares it with the mode's threshold.
func (a *answer) confidence(results []ranked, text, mode string) {
	var c float32
	if len(results) > 0 {
		top := results[0]
		lex := func() float32 { return a.keywords(text).Fraction(top.row) }
		switch alpha := float32(a.s.cfg.HybridAlpha); mode {
		case "semantic":
			c = top.dense
		case "keyword":
			c = lex()
		default:
			c = alpha*top.dense + (1-alpha)*lex()
		}
	}
	ok := float64(c) >= a.s.cfg.Confidence[mode]
	a.resp.Confidence, a.resp.Confident = &c, &ok
}

// explain says why a tool ranked where it did.
func (a *answer) explain(r ranked, text, mode string, dense bool) *Explanation {
	e := &Explanation{MatchedTerms: a.keywords(text).Matched(r.row)}
	if mode != "keyword" && dense {
		e.Semantic = &RankScore{Rank: r.denseRank, Score: r.dense}
	}
	if mode != "semantic" {
		e.Keyword = &RankScore{Rank: r.lexRank, Score: r.lex}
	}
	return e
}

func (a *answer) degrade(reason, msg string) {
	a.resp.Degraded = true
	if a.resp.Diagnostic == nil {
		a.resp.Diagnostic = &Diagnostic{}
	}
	a.resp.Diagnostic.EmbeddingError = msg
	a.s.metrics.fallbacks.WithLabelValues(reason).Inc()
}

// embedQuery embeds the query within the query timeout and normalises it.
// It returns nil, without error, when the query has nothing the embedder
// recognises (a zero vector carries no evidence).
func (a *answer) embedQuery(ctx context.Context, text string) (*index.Query, error) {
	if sp, ok := a.snap.query.(sparseEmbedder); ok {
		return a.sparseQuery(sp, a.terms(text))
	}
	var q []float32
	var err error
	if c := a.s.queries; c != nil {
		q, err = c.embed(ctx, a.s, a.snap.query, text, a.s.cfg.QueryTimeout)
	} else {
		qctx, cancel := context.WithTimeout(ctx, a.s.cfg.QueryTimeout)
		defer cancel()
		var vecs [][]float32
		if vecs, err = a.s.embed(qctx, a.snap.query, "query", []string{text}); err == nil {
			q = vecs[0]
		}
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
	return &index.Query{Dense: q}, nil
}

// sparseQuery embeds a query in-process (the local embedder): no timeout
// and no cache. Such a query writes tens of the index's columns; it stays
// sparse unless the index is too large for a sparse product to pay (see
// index.Matrix.PreferSparse).
func (a *answer) sparseQuery(sp sparseEmbedder, terms []string) (*index.Query, error) {
	idx, val := sp.EmbedSparseTerms(terms)
	a.s.countEmbed("query", nil)
	if len(val) == 0 || index.Normalize(val) == 0 {
		return nil, nil
	}
	mx := a.snap.Matrix
	if mx.Quantization() == index.QuantNone && !mx.PreferSparse(len(idx)) {
		dense := make([]float32, mx.Dim())
		for i, j := range idx {
			dense[j] = val[i]
		}
		return &index.Query{Dense: dense}, nil
	}
	return &index.Query{Sparse: index.Sparse{Idx: idx, Val: val}}, nil
}

// render adds schemas and provider definitions as asked.
func (a *answer) render() error {
	var namer tooldef.Namer
	for i := range a.resp.Tools {
		h := &a.resp.Tools[i]
		t := a.snap.Catalog.Tool(h.Row)
		if a.req.IncludeSchema {
			h.InputSchema, h.OutputSchema, h.Annotations = t.InputSchema, t.OutputSchema, t.Annotations
		}
		if a.req.Format == "" {
			continue
		}
		name := t.Name
		if a.req.Format != "mcp" {
			name = namer.Name(t)
			h.DefinitionName = name
		}
		def, warning, err := tooldef.Render(a.req.Format, t, name)
		if err != nil {
			return err
		}
		if warning != "" {
			a.resp.Warnings = append(a.resp.Warnings, t.ID()+": "+warning)
		}
		a.resp.Definitions = append(a.resp.Definitions, def)
	}
	return nil
}

// rowSet is a set of catalog rows, one bit each.
type rowSet []uint64

func newRowSet(n int) rowSet      { return make(rowSet, (n+63)/64) }
func (s rowSet) add(row int)      { s[row/64] |= 1 << (row % 64) }
func (s rowSet) has(row int) bool { return s[row/64]&(1<<(row%64)) != 0 }
