// Package search is the tool-search service: it builds index snapshots of a
// catalog, publishes them atomically, answers queries from whichever
// snapshot is current, falls back to keyword ranking when the embedding
// provider fails, and reports its own health.
package search

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolsearch/toolsearch/pkg/bm25"
	"github.com/toolsearch/toolsearch/pkg/catalog"
	"github.com/toolsearch/toolsearch/pkg/embedding"
	"github.com/toolsearch/toolsearch/pkg/index"
	"github.com/toolsearch/toolsearch/pkg/snapshot"
)

// Embedder turns texts into vectors: embedding.Local or embedding.OpenAI.
type Embedder = embedding.Embedder

// fitter is an embedder whose weights come from the corpus it embeds (the
// local one). Each build and each view embeds with its own fitted copy;
// since its vectors change with the catalog, neither they nor query
// vectors are cached.
type fitter interface {
	Fit(docs []string) embedding.Embedder
}

// sparseEmbedder embeds a query's analysed terms as the vector's nonzero
// columns, in-process and in microseconds: no timeout, no cache.
type sparseEmbedder interface {
	EmbedSparseTerms(terms []string) (idx []int32, val []float32)
}

// Limits and defaults.
const (
	DefaultTopK         = 10
	MaxTopK             = 50
	DefaultQueryTimeout = 2 * time.Second
	maxRetryDelay       = 2 * time.Minute
)

// ErrNotReady is returned before the first snapshot is published.
var ErrNotReady = errors.New("index not ready")

// ErrEmbedFailed is returned by Build when a rebuild could not embed the
// catalog and the current semantic snapshot was kept.
var ErrEmbedFailed = errors.New("embedding the catalog failed")

// Config holds the service's dependencies. Zero values are documented
// defaults.
type Config struct {
	// Load reads the catalog and policy afresh; Rebuild calls it.
	Load     func(ctx context.Context) (*Setup, error)
	Embedder Embedder
	// QueryTimeout bounds the embedding of one query, after which the query
	// is answered by keyword ranking; DefaultQueryTimeout when 0.
	QueryTimeout time.Duration
	// CursorKey signs list cursors. Empty: derived from the catalog, which
	// is stable across replicas but not secret; the signature only detects
	// tampering, since visibility is re-applied on every page anyway.
	CursorKey []byte
	// Version is the binary's version, reported in status.
	Version string
	// Registerer receives the service's metrics; nil registers nowhere.
	Registerer prometheus.Registerer
	// Logger receives build events; nil discards.
	Logger *slog.Logger
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// Fusion is how hybrid ranking combines dense and BM25 rankings:
	// FusionConvex (the default) or FusionRRF.
	Fusion string
	// HybridAlpha is the dense ranking's weight in convex fusion, in (0,1];
	// DefaultHybridAlpha when 0.
	HybridAlpha float64
	// SiblingBoost adds this multiple of a server's best fused score to
	// each of its tools in hybrid ranking; DefaultSiblingBoost when 0,
	// off when negative.
	SiblingBoost float64
	// SentenceWeight blends per-sentence BM25 scores into multi-sentence
	// queries' lexical scores, in [0,1); DefaultSentenceWeight when 0, off
	// when negative.
	SentenceWeight float64
	// Confidence holds, per retrieval mode (hybrid, semantic, keyword), the
	// confidence below which an answer is marked "confident": false.
	// Missing modes take DefaultConfidence's.
	Confidence map[string]float64
	// QueryCacheSize and QueryCacheTTL bound the cache of query vectors
	// from remote embedders; DefaultQueryCacheSize and DefaultQueryCacheTTL
	// when 0; a negative size turns the cache off.
	QueryCacheSize int
	QueryCacheTTL  time.Duration
	// Preload, when set, holds vectors from a snapshot file, used instead of
	// calling the embedder when they were built from the same catalog and
	// model (see package snapshot).
	Preload *Preload
	// OnPublish, when set, is called after each snapshot is published
	// (the MCP server announces the change to its clients).
	OnPublish func(*Snapshot)
	// RetryDelay is the first delay between failed start-up builds; 1s when
	// 0. It doubles up to two minutes.
	RetryDelay time.Duration
	// Quantization is the dense index's first pass: index.QuantNone (exact
	// float32, the default when empty) or index.QuantBinary (binary codes,
	// then Rescore candidates, at least, rescored exactly).
	Quantization string
	Rescore      int
}

// Preload is an index snapshot file's content.
type Preload struct {
	Source  string // the file, for logs
	Header  snapshot.Header
	Vectors [][]float32
}

// Snapshot is one immutable, searchable build of a setup. Everything a
// query needs is in it, so a query never mixes two builds.
type Snapshot struct {
	Catalog   *catalog.Catalog
	Matrix    *index.Matrix // nil when the embedder failed: keyword ranking only
	Keywords  *bm25.Index
	Version   string
	BuiltAt   time.Time
	BuildTook time.Duration
	// EmbedError says why Matrix is nil.
	EmbedError string
	// Embedded is how many tool texts this build sent to the embedder; the
	// rest came from the cache of the previous build or a snapshot file.
	Embedded int
	// Preloaded says whether the vectors came from a snapshot file.
	Preloaded bool
	setup     *Setup
	policy    *policy
	lowered   []string   // "server/name description", lower-cased, for +term
	serverOf  []int32    // row -> index into Catalog.Servers(), so hot paths need not copy Tools
	query     Embedder   // embeds queries the way the rows were embedded
	scratch   *sync.Pool // of *hybridScratch sized for this catalog
	// views are the snapshots that API keys with limited visibility search
	// (see buildViews), by key name; a key without one sees everything.
	views map[string]*Snapshot
}

// Semantic reports whether the snapshot has a dense index.
func (snap *Snapshot) Semantic() bool { return snap.Matrix != nil }

// Service builds and serves snapshots. It is safe for concurrent use;
// Search never waits for a build.
type Service struct {
	cfg     Config
	logger  *slog.Logger
	metrics *metrics
	cur     atomic.Pointer[Snapshot]
	queries *queryCache // nil for the local embedder, or when turned off
	buildMu sync.Mutex  // one build at a time
	seq     atomic.Int64

	// cache holds the vectors of the current catalog's texts, by content
	// key, so a rebuild embeds only new or changed tools. Guarded by
	// buildMu.
	cache map[[32]byte][]float32
	// distrust is set when a query's vector disagrees with the index's
	// width: the provider changed (or was wrong when the cache was filled),
	// so the next build embeds everything afresh.
	distrust atomic.Bool

	mu          sync.Mutex // guards the fields below
	lastErr     string
	lastErrAt   time.Time
	nextRetryAt time.Time
	lastQErr    string
	lastQErrAt  time.Time
}

// New returns a service with no snapshot; call Run or Build to make one.
func New(cfg Config) *Service {
	if cfg.QueryTimeout <= 0 {
		cfg.QueryTimeout = DefaultQueryTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Fusion == "" {
		cfg.Fusion = FusionConvex
	}
	if cfg.HybridAlpha <= 0 || cfg.HybridAlpha > 1 {
		cfg.HybridAlpha = DefaultHybridAlpha
	}
	switch {
	case cfg.SiblingBoost == 0:
		cfg.SiblingBoost = DefaultSiblingBoost
	case cfg.SiblingBoost < 0:
		cfg.SiblingBoost = 0
	}
	switch {
	case cfg.SentenceWeight == 0:
		cfg.SentenceWeight = DefaultSentenceWeight
	case cfg.SentenceWeight < 0 || cfg.SentenceWeight >= 1:
		cfg.SentenceWeight = 0
	}
	conf := maps.Clone(DefaultConfidence)
	maps.Copy(conf, cfg.Confidence)
	cfg.Confidence = conf
	if cfg.RetryDelay <= 0 {
		cfg.RetryDelay = time.Second
	}
	if cfg.Quantization == "" {
		cfg.Quantization = index.QuantNone
	}
	if cfg.Rescore <= 0 {
		cfg.Rescore = index.DefaultRescore
	}
	s := &Service{
		cfg:     cfg,
		logger:  cfg.Logger.With("component", "search"),
		metrics: newMetrics(cfg.Registerer),
	}
	if _, fitted := cfg.Embedder.(fitter); !fitted && cfg.QueryCacheSize >= 0 {
		size, ttl := cfg.QueryCacheSize, cfg.QueryCacheTTL
		if size == 0 {
			size = DefaultQueryCacheSize
		}
		if ttl <= 0 {
			ttl = DefaultQueryCacheTTL
		}
		s.queries = newQueryCache(size, ttl, cfg.Now, s.metrics)
	}
	return s
}

// Current returns the published snapshot, or nil before the first build.
func (s *Service) Current() *Snapshot { return s.cur.Load() }

// Build indexes setup and publishes the result. All fallible work happens
// before anything is published, so a failure leaves the current snapshot
// serving. If only the embedding fails and no semantic snapshot is being
// served, a keyword-only snapshot is published (the endpoint stays up) and
// returned without error; its EmbedError says why.
func (s *Service) Build(ctx context.Context, setup *Setup) (*Snapshot, error) {
	s.buildMu.Lock()
	defer s.buildMu.Unlock()
	start := s.cfg.Now()
	snap, err := s.build(ctx, setup)
	took := s.cfg.Now().Sub(start)
	s.metrics.buildSeconds.Observe(took.Seconds())
	if err != nil {
		s.metrics.builds.WithLabelValues("error").Inc()
		s.recordError(err)
		return nil, err
	}
	if !snap.Semantic() {
		s.recordError(errors.New(snap.EmbedError))
		cur := s.cur.Load()
		switch {
		case cur != nil && cur.Semantic():
			s.metrics.builds.WithLabelValues("error").Inc()
			return nil, fmt.Errorf("%w; the current semantic index keeps serving: %s", ErrEmbedFailed, snap.EmbedError)
		case cur != nil && cur.setup == setup:
			// A failed retry of the same setup: the keyword snapshot serving
			// is identical, so keep it (and its version).
			s.metrics.builds.WithLabelValues("degraded").Inc()
			return cur, nil
		}
	}
	snap.BuildTook = took
	s.cur.Store(snap)
	result := "ok"
	if !snap.Semantic() {
		result = "degraded"
	}
	s.metrics.builds.WithLabelValues(result).Inc()
	s.metrics.published(snap)
	s.logger.Info("index snapshot published", "version", snap.Version, "tools", snap.Catalog.Len(),
		"mode", snap.mode(), "took_ms", took.Milliseconds(), "warnings", len(snap.Catalog.Warnings()),
		"skipped", len(snap.Catalog.Skipped()), "embedded", snap.Embedded, "from_snapshot_file", snap.Preloaded)
	if s.cfg.OnPublish != nil {
		s.cfg.OnPublish(snap)
	}
	return snap, nil
}

func (snap *Snapshot) mode() string {
	if snap.Semantic() {
		return "semantic"
	}
	return "keyword"
}

func (s *Service) build(ctx context.Context, setup *Setup) (*Snapshot, error) {
	if setup == nil || setup.Catalog == nil {
		return nil, errors.New("no catalog")
	}
	pol, err := setup.resolve()
	if err != nil {
		return nil, err
	}
	cat := setup.Catalog
	texts := make([]string, cat.Len())
	docs := make([]bm25.Doc, cat.Len())
	for i, t := range cat.Tools() {
		f := t.Fields() // parses the schema: once per tool
		texts[i] = f.Text()
		docs[i] = bm25.DocOf(t, f)
	}
	snap := newSnapshot(cat, docs, s.cfg.Embedder)
	snap.setup, snap.policy = setup, pol
	var vecs [][]float32
	info := snap.query.Info()
	if p := s.cfg.Preload; p != nil {
		if why := p.Header.Mismatch(info.Provider, info.Model, info.BaseURL, info.Dimensions, cat.Hash(), cat.Len()); why != "" {
			s.logger.Warn("index snapshot file not used; embedding afresh", "file", p.Source, "reason", why)
		} else {
			vecs, snap.Preloaded = p.Vectors, true
		}
	}
	f, fitted := snap.query.(fitter)
	if fitted {
		// Queries need the weights fitted to this catalog either way.
		snap.query = f.Fit(texts)
	}
	var cache map[[32]byte][]float32
	switch {
	case snap.Preloaded && !fitted:
		// Later rebuilds re-embed only what changed since the file.
		keys := cacheKeys(info, texts)
		cache = make(map[[32]byte][]float32, len(keys))
		for i, k := range keys {
			cache[k] = vecs[i]
		}
	case snap.Preloaded:
	case fitted:
		// The weights are fitted to the corpus, so every vector changes
		// with the catalog: embed all (the local embedder is cheap).
		vecs, err = s.embed(ctx, snap.query, "build", texts)
		snap.Embedded = len(texts)
	default:
		vecs, cache, err = s.embedCached(ctx, snap, texts)
	}
	if err == nil {
		err = s.index(snap, vecs)
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		snap.EmbedError = fmt.Sprintf("embed %d tools: %v", len(texts), err)
	} else if cache != nil {
		// Only vectors that made an index are kept for the next build.
		s.cache = cache
	}
	seq := s.seq.Add(1)
	snap.Version = s.version(seq, cat, snap)
	snap.BuiltAt = s.cfg.Now().UTC()
	if err := s.buildViews(ctx, snap, texts, docs, vecs, seq); err != nil {
		return nil, err
	}
	return snap, nil
}

// newSnapshot is a snapshot's lexical side and per-row lookups, ready for
// its dense index.
func newSnapshot(cat *catalog.Catalog, docs []bm25.Doc, query Embedder) *Snapshot {
	lowered := make([]string, cat.Len())
	serverOf := make([]int32, cat.Len())
	serverIdx := make(map[string]int32, len(cat.Servers()))
	for i, name := range cat.Servers() {
		serverIdx[name] = int32(i)
	}
	for i, t := range cat.Tools() {
		serverOf[i] = serverIdx[t.Server]
		lowered[i] = strings.ToLower(t.ID() + " " + t.Description)
	}
	return &Snapshot{
		Catalog:  cat,
		Keywords: bm25.New(docs, bm25.DefaultConfig),
		lowered:  lowered,
		serverOf: serverOf,
		query:    query,
		scratch: &sync.Pool{New: func() any {
			return newHybridScratch(cat.Len(), len(cat.Servers()))
		}},
	}
}

// index builds snap's dense index from vecs.
func (s *Service) index(snap *Snapshot, vecs [][]float32) error {
	mx, err := index.New(vecs)
	if err != nil {
		return err
	}
	if s.cfg.Quantization == index.QuantBinary {
		mx = mx.WithBinary(s.cfg.Rescore)
	}
	snap.Matrix = mx
	return nil
}

// buildViews gives each API key that cannot see every tool a view: a
// snapshot of just its visible tools, built as if they were the whole
// catalog. A key's answers (names, errors, counts, BM25 statistics, the
// local embedder's weights, confidence) then come from its view alone, so
// no answer can tell a hidden tool from one that does not exist. Keys with
// the same visibility share a view. Remote vectors are reused, not
// re-embedded; the local embedder is fitted to each view (it is cheap).
func (s *Service) buildViews(ctx context.Context, snap *Snapshot, texts []string, docs []bm25.Doc, vecs [][]float32, seq int64) error {
	pol := snap.policy
	type built struct {
		rows []int
		view *Snapshot
	}
	var views []built
	for i, k := range pol.keys {
		vis := pol.keyVis[i]
		if vis.all {
			continue
		}
		var rows []int
		for r, ok := range vis.rows {
			if ok {
				rows = append(rows, r)
			}
		}
		j := slices.IndexFunc(views, func(b built) bool { return slices.Equal(b.rows, rows) })
		if j < 0 {
			v, err := s.view(ctx, snap, rows, texts, docs, vecs, seq)
			if err != nil {
				return fmt.Errorf("view of API key %q: %w", k.Name, err)
			}
			views, j = append(views, built{rows, v}), len(views)
		}
		if snap.views == nil {
			snap.views = map[string]*Snapshot{}
		}
		snap.views[k.Name] = views[j].view
	}
	return nil
}

func (s *Service) view(ctx context.Context, snap *Snapshot, rows []int, texts []string, docs []bm25.Doc, vecs [][]float32, seq int64) (*Snapshot, error) {
	cat := snap.Catalog.Subset(rows)
	sub := func(i int) int { // full row -> view row; rows is sorted
		j, ok := slices.BinarySearch(rows, i)
		if !ok {
			return -1
		}
		return j
	}
	vtexts := make([]string, len(rows))
	vdocs := make([]bm25.Doc, len(rows))
	for j, r := range rows {
		vtexts[j], vdocs[j] = texts[r], docs[r]
	}
	v := newSnapshot(cat, vdocs, s.cfg.Embedder)
	v.setup, v.policy = snap.setup, snap.policy.restrict(sub)
	v.EmbedError, v.Preloaded, v.BuildTook = snap.EmbedError, snap.Preloaded, snap.BuildTook
	if snap.Semantic() {
		var vv [][]float32
		if f, ok := v.query.(fitter); ok {
			v.query = f.Fit(vtexts)
			var err error
			if vv, err = s.embed(ctx, v.query, "build", vtexts); err != nil {
				return nil, err
			}
		} else {
			vv = make([][]float32, len(rows))
			for j, r := range rows {
				vv[j] = vecs[r]
			}
		}
		if err := s.index(v, vv); err != nil {
			return nil, err
		}
	}
	v.Version = s.version(seq, cat, v)
	v.BuiltAt = snap.BuiltAt
	return v, nil
}

// embedCached embeds, in one batch, only the texts the previous build did
// not have, and returns the cache of exactly this catalog's texts, for the
// caller to keep once the vectors have made an index.
func (s *Service) embedCached(ctx context.Context, snap *Snapshot, texts []string) ([][]float32, map[[32]byte][]float32, error) {
	keys := cacheKeys(snap.query.Info(), texts)
	vecs := make([][]float32, len(texts))
	var missing []string
	var missingAt []int
	cached := s.cache
	if s.distrust.Load() {
		cached = nil
	}
	cachedWidth := 0
	for i, t := range texts {
		if v, ok := cached[keys[i]]; ok {
			vecs[i], cachedWidth = v, len(v)
			continue
		}
		missing = append(missing, t)
		missingAt = append(missingAt, i)
	}
	if len(missing) > 0 {
		got, err := s.embed(ctx, snap.query, "build", missing)
		if err != nil {
			return nil, nil, err
		}
		if cachedWidth != 0 && len(got[0]) != cachedWidth {
			// The provider's width changed since the cache was filled: the
			// old vectors cannot share an index with the new ones, and the
			// newest answer is the provider as it is now. Embed all afresh.
			s.logger.Warn("embedding width changed; re-embedding the whole catalog", "was", cachedWidth, "now", len(got[0]))
			s.distrust.Store(true)
			return s.embedCached(ctx, snap, texts)
		}
		for j, i := range missingAt {
			vecs[i] = got[j]
		}
	}
	s.distrust.Store(false)
	snap.Embedded = len(missing)
	next := make(map[[32]byte][]float32, len(texts))
	for i, k := range keys {
		next[k] = vecs[i]
	}
	return vecs, next, nil
}

// cacheKeys are the content keys of texts' vectors under one embedder.
func cacheKeys(info embedding.Info, texts []string) [][32]byte {
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
	s.countEmbed(purpose, err)
	return vecs, err
}

// countEmbed records one embedding call and whether it gave valid vectors.
func (s *Service) countEmbed(purpose string, err error) {
	result := "ok"
	if err != nil {
		result = "error"
	}
	s.metrics.embedCalls.WithLabelValues(purpose, result).Inc()
}

// version names a snapshot: a build counter and a fingerprint of what was
// indexed, so two replicas serving the same catalog and model agree on the
// fingerprint part.
func (s *Service) version(seq int64, cat *catalog.Catalog, snap *Snapshot) string {
	info := snap.query.Info()
	h := sha256.Sum256([]byte(strings.Join([]string{cat.Hash(), info.Provider, info.Model, fmt.Sprint(info.Dimensions), snap.mode()}, "\x00")))
	return fmt.Sprintf("%d-%s", seq, hex.EncodeToString(h[:4]))
}

func (s *Service) recordError(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastErr = err.Error()
	s.lastErrAt = s.cfg.Now().UTC()
	s.logger.Error("index build failed", "err", err)
}

// Run builds setup and keeps retrying, with capped exponential backoff,
// until a semantic snapshot is published (a keyword-only one serves
// meanwhile). It returns nil then, or ctx's error. Retries rebuild the
// newest published setup, so an operator's rebuild is never undone. A nil
// setup (nothing to index yet, say before any upstream answers) is loaded
// with Config.Load on each attempt.
func (s *Service) Run(ctx context.Context, setup *Setup) error {
	delay := s.cfg.RetryDelay
	for {
		if cur := s.cur.Load(); cur != nil && cur.setup != nil {
			setup = cur.setup
		}
		attempt := setup
		if attempt == nil && s.cfg.Load != nil {
			var err error
			if attempt, err = s.cfg.Load(ctx); err != nil {
				s.recordError(err)
			}
		}
		if snap, err := s.Build(ctx, attempt); err == nil && snap.Semantic() {
			s.setNextRetry(time.Time{})
			return nil
		}
		if cur := s.cur.Load(); cur != nil && cur.Semantic() {
			s.setNextRetry(time.Time{})
			return nil // an operator's rebuild got there first
		}
		s.setNextRetry(s.cfg.Now().Add(delay).UTC())
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		delay = min(delay*2, maxRetryDelay)
	}
}

// recordQueryError keeps the latest query embedding failure for status.
func (s *Service) recordQueryError(msg string) {
	s.mu.Lock()
	s.lastQErr, s.lastQErrAt = msg, s.cfg.Now().UTC()
	s.mu.Unlock()
}

func (s *Service) setNextRetry(t time.Time) {
	s.mu.Lock()
	s.nextRetryAt = t
	s.mu.Unlock()
}

// ErrNoLoader is returned by Rebuild when the service has no Load function.
var ErrNoLoader = errors.New("rebuild: no catalog loader configured")

// Rebuild re-reads the catalog and policy and builds them. On failure the
// current snapshot keeps serving and the error is recorded for status.
func (s *Service) Rebuild(ctx context.Context) (*Snapshot, error) {
	if s.cfg.Load == nil {
		return nil, ErrNoLoader
	}
	setup, err := s.cfg.Load(ctx)
	if err != nil {
		s.metrics.builds.WithLabelValues("error").Inc()
		s.recordError(err)
		return nil, err
	}
	return s.Build(ctx, setup)
}
