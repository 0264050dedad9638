package search

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"runtime/debug"
	"slices"
	"strings"
	"sync"

	"github.com/toolsearch/toolsearch/pkg/analysis"
	"github.com/toolsearch/toolsearch/pkg/bm25"
	"github.com/toolsearch/toolsearch/pkg/catalog"
	"github.com/toolsearch/toolsearch/pkg/embedding"
	"github.com/toolsearch/toolsearch/pkg/hints"
	"github.com/toolsearch/toolsearch/pkg/index"
	"github.com/toolsearch/toolsearch/pkg/learn"
	"github.com/toolsearch/toolsearch/pkg/rank"
)

func (s *Service) build(ctx context.Context, setup *Setup) (*Snapshot, error) {
	if setup == nil || setup.Catalog == nil {
		return nil, errors.New("no catalog")
	}
	pol, err := resolve(setup)
	if err != nil {
		return nil, err
	}
	cat := setup.Catalog
	_, fitted := s.cfg.Embedder.(fitter)
	prev := s.cur.Load()
	reuse := s.sameDense(prev, cat)
	// Every tool's text is analysed once, in parts (catalog.Fields.Parts),
	// for BM25's fields and the local embedder's whole text alike; a
	// remote embedder reads the text itself.
	var texts []string
	if !reuse && (!fitted || s.preload != nil) {
		texts = make([]string, cat.Len())
	}
	hs := make([]hints.Hints, cat.Len())
	tools := cat.Tools()
	var learned *learn.Learned
	if s.learner != nil {
		learned = learnedFor(s.learner.learned.Load(), cat, nil)
	}
	corpus := analysis.English.CorpusWith(len(tools), bm25.ToolSegments, func() func(int, []string) {
		packer := newTextPacker()
		return func(i int, seg []string) {
			t := tools[i]
			f := t.Fields() // parses the schema: once per tool
			parts := f.Parts()
			copy(seg, parts[:])
			seg[catalog.NumParts] = learnedText(learned, t)
			if texts != nil {
				texts[i] = packer.text(&parts)
			}
			hs[i] = hints.Of(t.Name, t.Description, f.ParamNames, t.Schemas.Annotations())
		}
	})
	snap := newSnapshot(cat, corpus, hints.NewTable(hs), s.cfg.Embedder)
	snap.setup, snap.policy = setup, pol
	snap.learned, snap.companions = learned, companionsOf(learned, cat)
	if reuse {
		snap.shareDense(prev)
		return s.finish(ctx, snap, corpus, prev.views)
	}
	// Past here the analysis serves the local embedder and the views of
	// keys that see only some tools. A provider's build without such keys
	// needs it for neither, and lets it go before the vectors arrive
	// rather than hold it beside two snapshots (29 MiB at 100,000 tools).
	views := corpus
	if !pol.limited() {
		views = nil
	}
	if prev != nil {
		// A rebuild's peak is where its vectors fill beside the snapshot
		// serving, the analysis' garbage still mapped in pages the new
		// index cannot use (its blocks are large, and freed pages stay
		// with the process until the scavenger comes round). Collecting
		// here and handing those pages back before the vectors are made
		// lowers that peak: 10,000 tools 129.6 -> 125.0 MiB locally,
		// 221 -> 208 through a provider, for rebuilds 1.06-1.12x as long
		// (BENCHMARKS.md, step 19). A first build has no snapshot beside
		// it, and its peak is within bounds.
		debug.FreeOSMemory()
	}
	var file *index.Matrix // a snapshot file's vectors, when they match
	info := snap.query.Info()
	if prev != nil && !fitted {
		// The collection just run makes the live heap exact; the vectors
		// to come are the rest. (The local embedder's rebuilds peak in
		// their analysis, and bounding its embedding's garbage lowered
		// nothing.)
		boundGarbage(liveHeap() + uint64(cat.Len())*uint64(max(info.Dimensions, 0))*4)
	}
	if p := s.preload; p != nil {
		if why := p.Header.Mismatch(info.Provider, info.Model, info.BaseURL, info.Dimensions, cat.Hash(), cat.Len()); why != "" {
			s.logger.Warn("index snapshot file not used; embedding afresh", "file", p.Source, "reason", why)
		} else {
			file, snap.Preloaded = p.Matrix, p.Matrix != nil
		}
	}
	if fitted && snap.Preloaded {
		// Queries need the weights fitted to this catalog either way
		// (embedIndex fits them as it embeds).
		snap.query = snap.query.(fitter).FitCorpus(corpus)
	}
	var keys [][32]byte // the remote embedder's cache keys of texts
	switch {
	case snap.Preloaded && !fitted:
		// Later rebuilds re-embed only what changed since the file.
		keys = cacheKeys(info, texts...)
	case snap.Preloaded:
	case fitted:
		// The weights are fitted to the corpus, so every vector changes
		// with the catalog: embed all (the local embedder is cheap), into
		// the block that becomes the index, about as large as the one
		// serving for as many tools, and made beside as much again (its
		// columns grow, the fit's features). The heap is live only:
		// collected above.
		if prev != nil && prev.Matrix != nil {
			// The views are fitted and embedded again too.
			s.makeRoom(2 * (uint64(prev.Matrix.Bytes()) + viewBytes(prev)) * uint64(cat.Len()) / uint64(max(prev.Catalog.Len(), 1)))
		}
		err = s.embedIndex(ctx, snap, corpus)
		snap.Embedded = corpus.Len()
	default:
		keys, err = s.embedCached(ctx, snap, texts)
	}
	if file != nil {
		// The file's index is in slabs, as a provider's build writes
		// them, so the next build shares those of the rows it keeps.
		s.quantize(snap, file)
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		snap.EmbedError = fmt.Sprintf("embed %d tools: %v", cat.Len(), err)
	} else if keys != nil {
		// Only vectors that made an index are kept for the next build,
		// as that index's rows: not held a second time.
		s.last = newLastIndex(snap.Matrix, keys)
	}
	out, err := s.finish(ctx, snap, views, nil)
	if err == nil && s.preload != nil {
		// Used, the file's index is the snapshot's, and lives as long as
		// it does, not the process: a later build of the same catalog
		// shares it, and one of another embeds what changed, as it would
		// without a file. Not used, the file is stale (a catalog changed
		// without its snapshot, the usual way to have one), and kept it
		// would hold its vectors beside two snapshots' at every rebuild,
		// past the sizing rule; a later build it would have matched
		// embeds only what the cache lacks. The Preload is the service's
		// (Config.Preload): its index is let go wherever it is referred
		// to.
		s.preload.Matrix, s.preload = nil, nil
	}
	return out, err
}

// finish gives snap, its dense side final, its ranker, version and the
// views of keys that see only some tools; prevViews, when snap shares
// its dense side with the snapshot serving, are that snapshot's views,
// which lend theirs.
func (s *Service) finish(ctx context.Context, snap *Snapshot, corpus *analysis.Corpus, prevViews map[string]*Snapshot) (*Snapshot, error) {
	s.rankable(snap)
	seq := s.seq.Add(1)
	snap.Version = s.version(seq, snap.Catalog, snap)
	snap.BuiltAt = s.cfg.Now().UTC()
	snap.PolicyWarnings = append(snap.PolicyWarnings, overRequestLimit(snap.policy)...)
	if w := s.unapplied(snap.setup); w != "" {
		snap.PolicyWarnings = append(snap.PolicyWarnings, w)
	}
	snap.operator = s.cfg.Operator
	if s.cfg.NoViews {
		snap.viewless = true
		return snap, nil
	}
	if snap.policy.limited() {
		// A first local build's garbage has the room of its whole heap
		// (Build); the views are made beside the index just built, as a
		// rebuild's index is beside the one serving, and get a rebuild's.
		lowerGCPercent(buildGCPercent)
	}
	if err := s.buildViews(ctx, snap, corpus, prevViews); err != nil {
		return nil, err
	}
	return snap, nil
}

// sameDense reports whether a build of cat can take prev's dense index
// and query embedder as they are: prev indexed the same tools (the same
// catalog hash is every text in the same order), whose vectors a build
// would make again bit for bit (the local embedder is fitted to those
// texts alone; a provider's would be copied from the cache). Most
// rebuilds are such: learning's, each time its tally moves, which changes
// only the keyword index; an upstream refresh or a config reload that
// changed no tool. The matrix is immutable, so both snapshots read one
// copy, and the rebuild neither holds the vectors twice nor spends the
// local embedder's fit (BENCHMARKS.md, "A rebuild of the same tools"). A
// prev whose embedding failed, whose index is its sign codes alone
// (makeRoom), or a provider whose width a query found changed, is
// embedded afresh.
func (s *Service) sameDense(prev *Snapshot, cat *catalog.Catalog) bool {
	return prev != nil && prev.Matrix != nil && !prev.Matrix.Sketched() && !s.distrust.Load() && prev.Catalog.Hash() == cat.Hash()
}

// shareDense gives snap from's dense index and the embedder fitted to it.
func (snap *Snapshot) shareDense(from *Snapshot) {
	snap.Matrix, snap.query, snap.Preloaded = from.Matrix, from.query, from.Preloaded
}

// newSnapshot is a snapshot's lexical side and per-row lookups, ready for
// its dense index.
func newSnapshot(cat *catalog.Catalog, corpus *analysis.Corpus, hs hints.Table, query Embedder) *Snapshot {
	serverOf := make([]int32, cat.Len())
	serverIdx := make(map[string]int32, len(cat.Servers()))
	for i, name := range cat.Servers() {
		serverIdx[name] = int32(i)
	}
	serverTools := make([]int32, len(cat.Servers()))
	for i, t := range cat.Tools() {
		serverOf[i] = serverIdx[t.Server]
		serverTools[serverOf[i]]++
	}
	// BM25 expands a query word the catalog lacks through WordNet's
	// tables: load them (once per process, about 2 ms) beside the index,
	// not in the first such query, and without holding up a small
	// catalog's readiness for them.
	go analysis.English.Warm()
	return &Snapshot{
		Catalog:     cat,
		Keywords:    bm25.New(corpus, bm25.ToolLayout, bm25.DefaultConfig),
		hints:       hs,
		serverOf:    serverOf,
		serverTools: serverTools,
		query:       query,
	}
}

// embedIndex fits snap's embedder to the corpus and embeds its texts
// with the fitted copy, which becomes snap's, straight into snap's dense
// index: one row-major block the index adopts, or, for a matrix too large
// for a sparse query to read by row, columns (index.ByColumn).
func (s *Service) embedIndex(ctx context.Context, snap *Snapshot, corpus *analysis.Corpus) error {
	emb := snap.query.(fitter)
	n, dim := corpus.Len(), snap.query.Info().Dimensions
	var mx *index.Matrix
	var err error
	if index.ByColumn(n, dim) {
		cols := index.NewColumns(n, dim)
		snap.query, err = emb.FitEmbedCorpus(ctx, corpus, cols.SetRows)
		if err == nil {
			mx, err = cols.Matrix()
		}
	} else {
		block := make([]float32, n*dim)
		snap.query, err = emb.FitEmbedCorpus(ctx, corpus, func(first int, rows []float32, _ []uint64) { copy(block[first*dim:], rows) })
		if err == nil {
			mx, err = index.Adopt(block, n, dim, nil)
		}
	}
	s.metrics.embedding("build", err)
	if err != nil {
		return err
	}
	s.quantize(snap, mx)
	return nil
}

// quantize gives snap mx as its dense index: with its columns when the
// embedder's queries are sparse (index.Matrix.WithColumns), and with
// binary codes when the service is configured for them.
func (s *Service) quantize(snap *Snapshot, mx *index.Matrix) {
	if _, ok := snap.query.(sparseEmbedder); ok {
		mx = mx.WithColumns()
	}
	if s.cfg.Quantization == index.QuantBinary {
		mx = mx.WithBinary(s.cfg.Rescore)
	}
	snap.Matrix = mx
}

// rankable gives snap its ranker, once its dense index (if any) is final.
func (s *Service) rankable(snap *Snapshot) {
	snap.ranker = rank.New(s.cfg.Rank, snap.Matrix, snap.Keywords, snap.serverOf, len(snap.Catalog.Servers()), snap.companions)
}

// buildViews gives each API key that cannot see every tool a view: a
// snapshot of just its visible tools, built as if they were the whole
// catalog. A key's answers (names, errors, counts, BM25 statistics, the
// local embedder's weights, confidence) then come from its view alone, so
// no answer can tell a hidden tool from one that does not exist. Keys with
// the same visibility share a view. Remote vectors are reused, not
// re-embedded; the local embedder is fitted to each view (it is cheap).
func (s *Service) buildViews(ctx context.Context, snap *Snapshot, corpus *analysis.Corpus, prevViews map[string]*Snapshot) error {
	pol := snap.policy
	type built struct {
		rows []int
		view *Snapshot
	}
	var views []built
	for i, k := range pol.keys {
		rows, limited := pol.keyVis[i].Rows()
		if !limited {
			continue
		}
		j := slices.IndexFunc(views, func(b built) bool { return slices.Equal(b.rows, rows) })
		if j < 0 {
			v, err := s.view(ctx, snap, rows, corpus, prevViews[k.Name])
			if err != nil {
				return fmt.Errorf("view of API key %q: %w", k.Name, err)
			}
			views, j = append(views, built{rows, v}), len(views)
		}
		if snap.views == nil {
			snap.views = map[string]*Snapshot{}
		}
		snap.views[k.Name] = views[j].view
		snap.PolicyWarnings = append(snap.PolicyWarnings, partlyVisible(pol, k.Name, views[j].view.policy)...)
	}
	return nil
}

// maxRequestTools is the most tools OpenAI takes in one request; a
// request with more is refused whole ("array_above_max_length").
const maxRequestTools = 128

// overRequestLimit warns of the answers the core and templates can make
// longer than one request to OpenAI may be: a router that forwards the
// definitions of such an answer gets a 400 for its turn. Core tools come
// with every answer, a template's included.
// unapplied is the warning that the config file's sections setup names
// changed since start-up and were not applied, "" when none did; the log
// has it once for each set of sections, not at every rebuild (learning's
// come every minute).
func (s *Service) unapplied(setup *Setup) string {
	if setup == nil || len(setup.StartupChanges) == 0 {
		s.warnedStartup.Store("")
		return ""
	}
	sections := strings.Join(setup.StartupChanges, ", ")
	if s.warnedStartup.Swap(sections) != sections {
		s.logger.Warn("the config file changed where only a start applies it: the change waits for the next start", "sections", sections)
	}
	return "the config file's " + sections + " changed since start-up: a start applies them (core, templates and keys were read again)"
}

func overRequestLimit(pol *policy) []string {
	if pol == nil {
		return nil
	}
	var out []string
	if n := len(pol.core); n+MaxTopK > maxRequestTools {
		out = append(out, fmt.Sprintf("the core lists %d tools: with top_k up to %d an answer holds up to %d, over the %d tools OpenAI takes in one request", n, MaxTopK, n+MaxTopK, maxRequestTools))
	}
	for _, name := range pol.templateNames {
		if n := len(pol.templates[name].rows) + len(pol.core); n > maxRequestTools {
			out = append(out, fmt.Sprintf("template %q answers with %d tools, core included, over the %d tools OpenAI takes in one request", name, n, maxRequestTools))
		}
	}
	return out
}

// partlyVisible warns of the templates a key sees only some tools of: the
// key reads the template's description as the operator wrote it, and it
// may name the part the key cannot see.
func partlyVisible(pol *policy, key string, view *policy) []string {
	var out []string
	for _, name := range view.templateNames {
		if seen, all := len(view.templates[name].rows), len(pol.templates[name].rows); seen < all {
			out = append(out, fmt.Sprintf("template %q is partly visible to API key %q (%d of %d tools): its description is shown to that key as written; make sure it names nothing the key must not know of", name, key, seen, all))
		}
	}
	return out
}

// view builds the snapshot of snap's rows; was, when not nil, is the
// same key's view in the snapshot snap reuses the dense side of, and
// lends this one its own when it saw the same tools.
func (s *Service) view(ctx context.Context, snap *Snapshot, rows []int, corpus *analysis.Corpus, was *Snapshot) (*Snapshot, error) {
	cat := snap.Catalog.Subset(rows)
	sub := func(i int) int { // full row -> view row; rows is sorted
		j, ok := slices.BinarySearch(rows, i)
		if !ok {
			return -1
		}
		return j
	}
	vcorpus := corpus.Subset(rows)
	var learned *learn.Learned
	if snap.learned != nil {
		keep := viewTerms(vcorpus)
		learned = learnedFor(snap.learned, cat, func(term string) bool { return keep[term] })
		vocab := vcorpus.Vocab()
		vcorpus = vcorpus.Filter(catalog.NumParts, func(t uint32) bool { return keep[vocab[t]] })
	}
	v := newSnapshot(cat, vcorpus, snap.hints.Subset(rows), s.cfg.Embedder)
	v.setup, v.policy = snap.setup, snap.policy.restrict(sub)
	v.learned, v.companions = learned, companionsOf(learned, cat)
	v.EmbedError, v.Preloaded, v.BuildTook = snap.EmbedError, snap.Preloaded, snap.BuildTook
	if s.sameDense(was, cat) {
		v.shareDense(was)
	} else if snap.Semantic() {
		if _, ok := v.query.(fitter); ok {
			if err := s.embedIndex(ctx, v, vcorpus); err != nil {
				return nil, err
			}
		} else {
			// The full index's rows, read where they are: a copy held
			// them again for every distinct view (BENCHMARKS.md, "Views
			// in the memory rule").
			mx, err := snap.Matrix.Subset(rows)
			if err != nil {
				return nil, err
			}
			s.quantize(v, mx)
		}
	}
	s.rankable(v)
	// A view's version names what its keys can see, not the build: a
	// rebuild for tools they cannot see leaves it as it was.
	v.Version = "view-" + fingerprint(cat, v)
	v.BuiltAt = snap.BuiltAt
	return v, nil
}

// lastIndex is the index of the last build that embedded through a
// provider, with its rows' content keys: what the next build takes the
// vectors of texts it had from. Its rows are found by binary search over
// byKey, not a map: a map of 100,000 keys is 7.8 MiB held for as long as
// the index serves, there for the one rebuild that reads it, where the
// order is 0.4 MiB and the searches cost that rebuild a few milliseconds.
type lastIndex struct {
	mx    *index.Matrix
	keys  [][32]byte
	byKey []int32 // rows in key order, equal keys in row order
}

func newLastIndex(mx *index.Matrix, keys [][32]byte) *lastIndex {
	byKey := make([]int32, len(keys))
	for i := range byKey {
		byKey[i] = int32(i)
	}
	slices.SortStableFunc(byKey, func(a, b int32) int { return bytes.Compare(keys[a][:], keys[b][:]) })
	return &lastIndex{mx, keys, byKey}
}

// row is the first row holding the text whose key is k.
func (l *lastIndex) row(k [32]byte) (int, bool) {
	i, ok := slices.BinarySearchFunc(l.byKey, k, func(r int32, k [32]byte) int { return bytes.Compare(l.keys[r][:], k[:]) })
	if !ok {
		return -1, false
	}
	return int(l.byKey[i]), true
}

// sources is, for each of keys, the row of the last index holding its
// text, or -1 when none does. A text in the row after the one the text
// before it took is given that row, so that the runs of rows a rebuild
// kept in order (and texts repeated within them) come out as runs, which
// index.NewDraft shares whole.
func (l *lastIndex) sources(keys [][32]byte) []int {
	src := make([]int, len(keys))
	for i, k := range keys {
		src[i] = -1
		if l == nil {
			continue
		}
		if i > 0 && src[i-1] >= 0 && src[i-1]+1 < len(l.keys) && l.keys[src[i-1]+1] == k {
			src[i] = src[i-1] + 1
		} else if r, ok := l.row(k); ok {
			src[i] = r
		}
	}
	return src
}

// toolTexts is what a provider embeds of each of cat's tools.
func toolTexts(cat *catalog.Catalog) []string {
	texts := make([]string, cat.Len())
	packer := newTextPacker()
	for i, t := range cat.Tools() {
		parts := t.Fields().Parts()
		texts[i] = packer.text(&parts)
	}
	return texts
}

// embedCached embeds, in one batch, only the texts the last index did not
// hold, into snap's dense index (index.Draft): the last index's rows are
// shared where a run of them is unchanged and copied as they are where
// not, and the provider's answers are written into their rows as they are
// read, so a rebuild after a few texts changed holds the vectors of the
// rest once, with the index serving. It returns the texts' cache keys,
// and clears texts.
func (s *Service) embedCached(ctx context.Context, snap *Snapshot, texts []string) ([][32]byte, error) {
	info := snap.query.Info()
	keys := cacheKeys(info, texts...)
	last := s.last
	if s.distrust.Load() {
		last = nil
	}
	src := last.sources(keys)
	var missing []string
	var missingAt []int
	for i, r := range src {
		if r < 0 {
			missing = append(missing, texts[i])
			missingAt = append(missingAt, i)
		}
	}
	// The vectors' width is the last index's, or the one asked for, or
	// the serving index's (after a width change, as good a guess as any).
	width := info.Dimensions
	if cur := s.cur.Load(); last != nil {
		width = last.mx.Dim()
	} else if width <= 0 && cur != nil && cur.Semantic() {
		width = cur.Matrix.Dim()
	}
	// The heap is live only: build collected before this. The views are
	// made again beside the new index, as large as they are now (a
	// provider's hold only the numbers of the index's rows they read).
	var views uint64
	if cur := s.cur.Load(); cur != nil {
		views = viewBytes(cur)
	}
	if len(missing) > 0 && s.makeRoom(uint64(len(missing))*uint64(max(width, 0))*4+views) {
		// The rows the last index held went with it: embed every text.
		last = nil
		src = last.sources(keys)
		missing, missingAt = slices.Clone(texts), make([]int, len(texts))
		for i := range missingAt {
			missingAt[i] = i
		}
	}
	// The texts are this function's to let go: from here each is held by
	// missing alone until its vector is written, and by its batch until
	// the batch is answered (EmbedInto keeps its own). A rebuild of
	// 100,000 changed texts would otherwise hold their 46 MiB to the end,
	// beside two snapshots, where its peak is. The new rows' slabs are
	// allocated as they are first written, and the pages the texts free
	// are handed back meanwhile (pageReturner), so that the texts' memory
	// does not stay resident under the rows.
	clear(texts)
	var draft *index.Draft
	if len(missing) < len(texts) {
		var err error
		if draft, err = index.NewDraft(last.mx, src, last.mx.Dim()); err != nil {
			return nil, err
		}
	}
	if len(missing) > 0 {
		var mu sync.Mutex
		var draftErr error
		changed := false
		pages := newPageReturner(s.cur.Load() != nil, len(missing), width)
		var cut []int // rows whose text the provider took only cut
		ectx := embedding.WithCutNotice(ctx, func(j, _ int) {
			mu.Lock()
			cut = append(cut, missingAt[j])
			mu.Unlock()
		})
		err := s.embedRows(ectx, snap.query, "build", missing, func(j int, vec []float32) {
			mu.Lock()
			defer mu.Unlock()
			if draft == nil && draftErr == nil { // the model's width is known from its first answer
				draft, draftErr = index.NewDraft(nil, src, len(vec))
			}
			if draftErr != nil {
				return
			}
			if len(vec) != draft.Dim() {
				changed = true
				return
			}
			copy(draft.Row(missingAt[j]), vec)
			missing[j] = ""
			pages.wrote()
		})
		if err == nil {
			err = draftErr
		}
		if err != nil {
			return nil, err
		}
		if len(cut) > 0 {
			s.warnCut(snap.Catalog, cut)
		}
		if changed && last == nil {
			// Not the last index's width against the provider's: the
			// provider's own answers disagree.
			return nil, fmt.Errorf("the embedding provider answered vectors of %d dimensions and of another width in one build", draft.Dim())
		}
		if changed {
			// The provider's width changed since the last index was
			// built: its vectors cannot share an index with the new ones,
			// and the newest answer is the provider as it is now. Embed
			// all afresh.
			s.logger.Warn("embedding width changed; re-embedding the whole catalog", "was", last.mx.Dim())
			s.distrust.Store(true)
			return s.embedCached(ctx, snap, toolTexts(snap.Catalog))
		}
	}
	s.distrust.Store(false)
	snap.Embedded = len(missing)
	s.quantize(snap, draft.Matrix())
	return keys, nil
}

// warnCut logs the tools whose text was over the embedding model's
// length, each embedded by its head (embedding.WithCutNotice): their
// descriptions are the operator's to shorten. Once per build that
// embedded them: the build cache keeps their vectors after.
func (s *Service) warnCut(cat *catalog.Catalog, rows []int) {
	slices.Sort(rows)
	tools := cat.Tools()
	var names []string
	for _, row := range rows[:min(len(rows), 5)] {
		names = append(names, tools[row].ID())
	}
	s.logger.Warn("tool texts over the embedding model's length were embedded by their head", "count", len(rows), "first", names)
}

// rowEmbedder hands each vector to put as its answer is read
// (embedding.OpenAI), so that a build writes a provider's answers straight
// into its index; put copies vec, which is valid only during the call.
type rowEmbedder interface {
	EmbedInto(ctx context.Context, texts []string, put func(i int, vec []float32)) error
}

// embedRows embeds texts with e, handing each vector to put, and counts
// the call. An embedder that only returns vectors has them validated
// here, where they enter.
func (s *Service) embedRows(ctx context.Context, e Embedder, purpose string, texts []string, put func(i int, vec []float32)) error {
	if re, ok := e.(rowEmbedder); ok {
		err := re.EmbedInto(ctx, texts, put)
		s.metrics.embedding(purpose, err)
		return err
	}
	vecs, err := e.Embed(ctx, texts)
	if err == nil {
		_, err = index.Validate(vecs, len(texts), 0)
	}
	s.metrics.embedding(purpose, err)
	if err != nil {
		return err
	}
	for i, v := range vecs {
		put(i, v)
	}
	return nil
}

// cacheKeys are the content keys of texts' vectors under one embedder,
// for the build cache and the query cache alike.
func cacheKeys(info embedding.Info, texts ...string) [][32]byte {
	prefix := fmt.Sprintf("%s\x00%s\x00%s\x00%d\x00", info.Provider, info.BaseURL, info.Model, info.Dimensions)
	keys := make([][32]byte, len(texts))
	for i, t := range texts {
		keys[i] = sha256.Sum256([]byte(prefix + t))
	}
	return keys
}

// embed calls the embedder and counts the call.
func (s *Service) embed(ctx context.Context, e Embedder, purpose string, texts []string) ([][]float32, error) {
	vecs, err := e.Embed(ctx, texts)
	s.metrics.embedding(purpose, err)
	return vecs, err
}

// version names a snapshot: a build counter and a fingerprint of what was
// indexed, so two replicas serving the same catalog and model agree on the
// fingerprint part.
func (s *Service) version(seq int64, cat *catalog.Catalog, snap *Snapshot) string {
	return fmt.Sprintf("%d-%s", seq, fingerprint(cat, snap))
}

// fingerprint names what snap's answers are made from: the catalog, the
// model, the mode and, once something is learned, what the index takes of
// it (learnedHash, as the learner tells a change by). A view's version is
// its fingerprint alone, with no build counter: without the learned part,
// learning changed a restricted key's answers under the same
// index_version. A view's tally is its own, filtered to its tools and
// their words (learnedFor), so tools it cannot see move nothing.
func fingerprint(cat *catalog.Catalog, snap *Snapshot) string {
	info := snap.query.Info()
	parts := []string{cat.Hash(), info.Provider, info.Model, fmt.Sprint(info.Dimensions), string(snap.mode())}
	if !snap.learned.Empty() {
		parts = append(parts, fmt.Sprint(learnedHash(snap.learned)))
	}
	h := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(h[:4])
}

// maxLearnedTF caps how often a learned term is written into a tool's
// learned field: BM25 saturates term frequency anyway, and a term taught
// by many sessions should not drown the tool's own words.
const maxLearnedTF = 8

// learnedTF is how often a learned term of weight w is written into its
// tool's learned field: its weight rounded, at least once, at most
// maxLearnedTF. A tally whose every term and companion rounds the same
// builds the same index (learner.load).
func learnedTF(w float64) int { return min(max(int(math.Round(w)), 1), maxLearnedTF) }

// learnedText is the learned field of t: each learned term learnedTF
// times.
func learnedText(l *learn.Learned, t catalog.Tool) string {
	if l == nil || len(l.Terms) == 0 {
		return ""
	}
	var b strings.Builder
	for _, w := range l.Terms[t.ID()] {
		for range learnedTF(w.Weight) {
			b.WriteString(w.Name)
			b.WriteByte(' ')
		}
	}
	return b.String()
}

// learnedFor is what an index of cat holds of l: the learned terms of
// cat's tools that keep accepts (all when keep is nil), and their
// companions among cat's tools, a view's catalog holding only what its
// keys see; nil when that is nothing.
func learnedFor(l *learn.Learned, cat *catalog.Catalog, keep func(term string) bool) *learn.Learned {
	if l.Empty() {
		return nil
	}
	in := func(id string) bool { _, ok := cat.ByID(id); return ok }
	out := &learn.Learned{Terms: map[string][]learn.Weighted{}, Companions: map[string][]learn.Weighted{}}
	for id, ws := range l.Terms {
		if !in(id) {
			continue
		}
		for _, w := range ws {
			if keep == nil || keep(w.Name) {
				out.Terms[id] = append(out.Terms[id], w)
			}
		}
	}
	for id, ws := range l.Companions {
		if !in(id) {
			continue
		}
		for _, w := range ws {
			if in(w.Name) && w.Name != id {
				out.Companions[id] = append(out.Companions[id], w)
			}
		}
	}
	if out.Empty() {
		return nil
	}
	return out
}

// companionsOf is l's companions (learnedFor cat) by row of cat; nil when
// there are none. A companion's strength is w/(w+MinSessions): half at
// the least evidence that counts, nearing 1 with more.
func companionsOf(l *learn.Learned, cat *catalog.Catalog) [][]rank.Companion {
	if l == nil || len(l.Companions) == 0 {
		return nil
	}
	out := make([][]rank.Companion, cat.Len())
	for id, cs := range l.Companions {
		i, _ := cat.ByID(id)
		for _, c := range cs {
			j, _ := cat.ByID(c.Name)
			out[i] = append(out[i], rank.Companion{Row: int32(j), Strength: float32(c.Weight / (c.Weight + learn.DefaultMinSessions))})
		}
	}
	return out
}

// viewTerms says which terms of a view's learned fields the view keeps:
// those a dictionary knows or the view's own tools use. Learning keeps the
// catalog's words besides the dictionary's, so a word only a hidden tool
// has could otherwise reach a key through a tool it sees, and tell it that
// such a tool exists. Only the learned fields' terms are looked up.
func viewTerms(c *analysis.Corpus) map[string]bool {
	ids := map[uint32]bool{} // learned term -> used by the view's text
	for i := range c.Len() {
		for _, t := range c.Segment(i, catalog.NumParts) {
			ids[t] = false
		}
	}
	if len(ids) == 0 {
		return nil
	}
	for i := range c.Len() {
		for _, t := range c.Doc(i) {
			if _, ok := ids[t]; ok {
				ids[t] = true
			}
		}
	}
	vocab := c.Vocab()
	keep := make(map[string]bool, len(ids))
	for t, used := range ids {
		keep[vocab[t]] = used || analysis.English.InLexicon(vocab[t])
	}
	return keep
}
