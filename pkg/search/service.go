// Package search is the tool-search service: it builds index snapshots of
// a catalog, publishes them atomically, answers queries from whichever
// snapshot is current, falls back to keyword ranking when the embedding
// provider fails, and reports its own health.
//
// Its files are its two jobs. The lifecycle: service.go (the service,
// Build, Run, Rebuild), build.go (one snapshot and the per-key views),
// status.go, metrics.go, querycache.go. The request policy around ranking:
// request.go (the request and answer types), operators.go, answer.go
// (core, templates, select, list, visibility), retrieve.go (which ranker
// answers, confidence, explain), lookup.go, setup.go (the policy a setup
// resolves to). Ranking itself is package rank; who may see what is
// package access. It is about 2,000 lines because the two jobs share the
// snapshot's private state (views, resolved policy, ranker), which a
// package boundary would have to export to every caller.
package search

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"runtime/debug"
	rtmetrics "runtime/metrics"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolsearch/toolsearch/pkg/analysis"
	"github.com/toolsearch/toolsearch/pkg/bm25"
	"github.com/toolsearch/toolsearch/pkg/catalog"
	"github.com/toolsearch/toolsearch/pkg/embedding"
	"github.com/toolsearch/toolsearch/pkg/hints"
	"github.com/toolsearch/toolsearch/pkg/index"
	"github.com/toolsearch/toolsearch/pkg/internal/pause"
	"github.com/toolsearch/toolsearch/pkg/learn"
	"github.com/toolsearch/toolsearch/pkg/rank"
	"github.com/toolsearch/toolsearch/pkg/sizing"
	"github.com/toolsearch/toolsearch/pkg/snapshot"
)

// Embedder turns texts into vectors: embedding.Local or embedding.OpenAI.
type Embedder = embedding.Embedder

// fitter is an embedder whose weights come from the corpus it embeds (the
// local one). Each build and each view embeds with its own fitted copy;
// since its vectors change with the catalog, neither they nor query
// vectors are cached. FitEmbedCorpus fits a copy and embeds the corpus's
// texts with it, a batch of rows at a time, for the index to keep as it
// will; FitCorpus only fits, for an index whose vectors come from a file.
type fitter interface {
	FitCorpus(c *analysis.Corpus) embedding.Embedder
	FitEmbedCorpus(ctx context.Context, c *analysis.Corpus, set embedding.Rows) (embedding.Embedder, error)
}

// sparseEmbedder embeds a query's analysed terms as the vector's nonzero
// columns, in-process and in microseconds: no timeout, no cache.
type sparseEmbedder interface {
	AppendSparseTerms(idx []int32, val []float32, terms []string) ([]int32, []float32)
}

// Limits and defaults.
const (
	buildGCPercent      = 25
	rebuildGCPercent    = 12
	rebuildGCFrom       = 256 << 20 // live heap bytes
	DefaultTopK         = 10
	MaxTopK             = 50
	DefaultQueryTimeout = 2 * time.Second
	maxRetryDelay       = 2 * time.Minute
	// An upstream whose tools change again and again (a list_changed
	// flood, a listing that differs each time) would otherwise have the
	// service rebuild back to back, one core busy and, with a provider,
	// an embedding call each time: 300 tool additions 20 ms apart made
	// 277 rebuilds and 10.8 s of CPU in 10 s (RELIABILITY.md). Rebuilds
	// that follow changes start at least DefaultFollowGap apart, and
	// after an idle time of followIdle times the last one's duration, so
	// they take at most a fifth of a core; the first change after a quiet
	// spell is rebuilt at once.
	DefaultFollowGap = time.Second
	followIdle       = 4
)

// DefaultConfidence is, per mode, the confidence under which the best
// retrieved tool is more often wrong than right, measured for the local
// embedder on the dev halves of the shared eval sets (evals/README.md). An
// OpenAI-compatible model's cosines sit on another scale: calibrate with
// toolsearch eval, which reports the threshold for any catalog and model.
var DefaultConfidence = map[Mode]float64{ModeHybrid: 0.12, ModeSemantic: 0.24, ModeKeyword: 0.09}

// DefaultNoMatch is, per mode, the confidence under which the tool a query
// needs is more likely absent from the catalog than present: a question
// distinct from DefaultConfidence's (is the best tool right?), and
// calibrated for it, leave-one-set-out, by evals/nomatch (evals/README.md).
var DefaultNoMatch = map[Mode]float64{ModeHybrid: 0.170, ModeSemantic: 0.244, ModeKeyword: 0.129}

// ErrNotReady is returned before the first snapshot is published.
var ErrNotReady = errors.New("index not ready")

// ErrEmbedFailed is returned by Build when a rebuild could not embed the
// catalog and the current semantic snapshot was kept.
var ErrEmbedFailed = errors.New("embedding the catalog failed")

// ErrDropped is returned by Build, beside ErrEmbedFailed, when the build
// had let the semantic index serving go for the memory limit (a rebuild
// the limit could not hold beside it) and then made none: nothing
// semantic serves until a build does.
var ErrDropped = errors.New("the semantic index serving was let go for the memory limit")

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
	// Rank holds the ranking knobs (fusion, weights); zero values are
	// rank's defaults.
	Rank rank.Config
	// Confidence holds, per retrieval mode (hybrid, semantic, keyword), the
	// confidence below which an answer is marked "confident": false.
	// Missing modes take DefaultConfidence's.
	Confidence map[Mode]float64
	// NoMatch holds, per mode, the confidence below which an answer is
	// marked no_match: the tool the query needs is likely absent. Missing
	// modes take DefaultNoMatch's.
	NoMatch map[Mode]float64
	// QueryCacheSize and QueryCacheTTL bound the cache of query vectors
	// from remote embedders; DefaultQueryCacheSize and DefaultQueryCacheTTL
	// when 0; a negative size turns the cache off.
	QueryCacheSize int
	QueryCacheTTL  time.Duration
	// Learning, when set, turns on learning from use (see Learning).
	Learning *Learning
	// LearningOff says why learning, configured on, is off (its store
	// could not be opened), for status: a warning at start-up was all an
	// operator had.
	LearningOff string
	// Preload, when set, holds the index of a snapshot file's vectors,
	// used instead of calling the embedder when they were built from the
	// same catalog and model (see package snapshot). The service takes
	// it: the first build to be published makes it its index, when it
	// matches, and sets Matrix to nil either way.
	Preload *Preload
	// RetryDelay is the first delay between failed start-up builds; 1s when
	// 0. It doubles up to two minutes.
	RetryDelay time.Duration
	// FollowGap is the least time between the starts of two rebuilds
	// that follow changes (Follow); DefaultFollowGap when 0. Each also
	// waits followIdle times as long as the last one took.
	FollowGap time.Duration
	// Quantization is the dense index's first pass: index.QuantNone (exact
	// float32, the default when empty) or index.QuantBinary (binary codes,
	// then Rescore candidates, at least, rescored exactly).
	Quantization string
	Rescore      int
	// MemoryLimit is the container's memory limit in bytes (0: none
	// known), Connections the most connections the API holds (over TLS
	// when TLS) and BodyBudget the request bodies it reads at once. Status
	// and the metrics show the limit beside what the catalog served needs
	// at its peak (package sizing), and a published catalog that needs
	// more than the limit is logged as a warning: a pod that would be
	// OOM-killed at its next rebuild.
	MemoryLimit int64
	Connections int
	TLS         bool
	BodyBudget  int64
	// NoViews builds no view for the keys that see only some tools (their
	// visibility is still checked): for a process that searches as no key
	// or only writes the index (toolsearch eval, query, index, lint), where
	// each view was a local embedder's fit and index made for nothing
	// (toolsearch index, 100,000 tools and twelve keys' views: 23.7 s and
	// 2.9 GB, against 8.1 s and 0.8 GB; BENCHMARKS.md).
	NoViews bool
	// Operator answers a search made as no key from the whole catalog,
	// whatever keys the config names, where a server refuses it: for a
	// command its operator runs over the catalog and config they hold
	// (toolsearch eval, query), so that the environment of a deployment
	// whose keys admit no anonymous caller does not fail every search.
	// Never for a server, where no key is an anonymous caller.
	Operator bool
}

// Preload is an index snapshot file's content.
type Preload struct {
	Source string // the file, for logs
	Header snapshot.Header
	Matrix *index.Matrix // snapshot.ReadFile's
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
	// PolicyWarnings are the operator's to read (admin status): templates
	// partly visible to a key, whose description that key reads whole.
	PolicyWarnings []string
	setup          *Setup
	policy         *policy
	hints          hints.Table  // row -> declared and inferred safety annotations
	serverOf       []int32      // row -> index into Catalog.Servers()
	serverTools    []int32      // index into Catalog.Servers() -> its tools
	query          Embedder     // embeds queries the way the rows were embedded
	ranker         *rank.Ranker // over Matrix and Keywords; set once both are
	// views are the snapshots that API keys with limited visibility search
	// (see buildViews), by key name; a key without one sees everything.
	// viewless: none were built (Config.NoViews), and such keys are refused.
	// operator: a search as no key is the operator's (Config.Operator).
	views    map[string]*Snapshot
	viewless bool
	operator bool
	// learned is what learning had taught when the snapshot was built (nil:
	// nothing), already in Keywords' learned field; companions are its
	// companions by row, for the ranker.
	learned    *learn.Learned
	companions [][]rank.Companion
	// dropped says that the dense index was let go for a rebuild the
	// memory limit could not hold beside it (dropDense).
	dropped bool
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
	// onPublish is called after each snapshot is published (see OnPublish).
	onPublish atomic.Pointer[func(*Snapshot)]
	queries   *queryCache // nil for the local embedder, or when turned off
	learner   *learner    // nil while learning is off
	buildMu   sync.Mutex  // one build at a time
	seq       atomic.Int64
	// warnedNeed is the last memory need checkMemory warned of.
	warnedNeed atomic.Int64
	// warnedStartup is the config sections unapplied last warned of.
	warnedStartup atomic.Value

	// last holds the provider's vectors of the current catalog's texts
	// and their content keys, so a rebuild embeds only new or changed
	// tools and shares the index rows of the rest. Guarded by buildMu.
	last *lastIndex
	// preload is the snapshot file's vectors (Config.Preload) until the
	// first build is published. Guarded by buildMu.
	preload *Preload
	// dropped is set when the build under way let the serving index go
	// (dropDense), and retry is signalled when such a build ended without
	// an index of its own: Follow builds again. Guarded by buildMu.
	dropped bool
	retry   chan struct{}
	// distrust is set when a query's vector disagrees with the index's
	// width: the provider changed (or was wrong when the cache was filled),
	// so the next build embeds everything afresh.
	distrust atomic.Bool
	// qbreaker keeps queries from a provider that fails them.
	qbreaker *queryBreaker

	mu          sync.Mutex // guards the fields below
	pending     bool       // a change was seen that no published snapshot holds yet
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
	cfg.Rank = cfg.Rank.WithDefaults()
	conf := maps.Clone(DefaultConfidence)
	maps.Copy(conf, cfg.Confidence)
	cfg.Confidence = conf
	noMatch := maps.Clone(DefaultNoMatch)
	maps.Copy(noMatch, cfg.NoMatch)
	cfg.NoMatch = noMatch
	if cfg.RetryDelay <= 0 {
		cfg.RetryDelay = time.Second
	}
	if cfg.FollowGap <= 0 {
		cfg.FollowGap = DefaultFollowGap
	}
	if cfg.Quantization == "" {
		cfg.Quantization = index.QuantNone
	}
	if cfg.Rescore <= 0 {
		cfg.Rescore = index.DefaultRescore
	}
	s := &Service{
		cfg:      cfg,
		logger:   cfg.Logger.With("component", "search"),
		metrics:  newMetrics(cfg.Registerer),
		preload:  cfg.Preload,
		retry:    make(chan struct{}, 1),
		qbreaker: newQueryBreaker(),
	}
	s.metrics.limit.Set(float64(max(cfg.MemoryLimit, 0)))
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
	if cfg.Learning != nil && cfg.Learning.Store != nil {
		s.learner = newLearner(s, *cfg.Learning)
	}
	return s
}

// OnPublish registers f to be called after each snapshot is published
// (the MCP server announces the change to its clients). It is registered
// after New, since what it calls is built from the service.
func (s *Service) OnPublish(f func(*Snapshot)) { s.onPublish.Store(&f) }

// boundGarbage lowers the collector's percentage for the rest of a
// rebuild, whose heap will hold heap bytes, so that garbage adds about
// rebuildSlack to it rather than a share. The percentage a rebuild starts
// with suits its analysis, which makes most of its garbage; the embedding
// that follows makes little (a request's texts, an answer's buffer), but
// its vectors double the heap that percentage is of. At 100,000 tools
// through a provider (D = 1,536) the rebuild's peak fell 1,687 -> 1,614
// MiB, for a rebuild about a tenth longer (BENCHMARKS.md, step 26): the
// vectors hold no pointers, so each collection is short, but there are
// more of them.
func boundGarbage(heap uint64) {
	if heap > 0 {
		lowerGCPercent(max(int(rebuildSlack*100/heap), 1))
	}
}

// pageReturner hands the pages a rebuild's embedding frees back to the
// system as its new rows are written, a 32nd of them at a time. The texts
// sent are let go as their rows are written, and the rows' slabs are
// allocated as they are first written (index.Draft), but the pages the
// texts leave are small runs among live objects, which a slab cannot
// take, and the runtime keeps freed pages while they are within a tenth
// of its heap goal: so without this the texts' 46 MiB at 100,000 tools
// stayed resident beside both indexes, under the new rows (BENCHMARKS.md,
// "A rebuild's rows made as they come"; searches served meanwhile paid
// about 4 % at p50 and 7 % at p99 for its 85 MiB). A 32nd is about a
// provider's batch at 100,000 tools, so the garbage a batch leaves (its
// texts, its request's and answer's buffers) goes back before the next
// one's: an eighth at a time left 20 MiB more at that rebuild's peak, and
// a 64th lowered it no further ("A posting in four bytes; a rebuild's
// pages returned a batch at a time"). nil, which does nothing, for a
// first build (nothing serving beside it) and for few rows.
type pageReturner struct {
	every   int // rows between returns
	written int // guarded by the embedding's lock
	busy    atomic.Bool
}

// returnPagesFrom is the fewest bytes of fresh rows worth collections of
// their own: under it a rebuild's garbage is small beside the heap it adds
// to. A variable, so that a test's small rebuild can return its pages.
var returnPagesFrom = 16 << 20

func newPageReturner(rebuild bool, rows, width int) *pageReturner {
	if !rebuild || rows*width*4 < returnPagesFrom {
		return nil
	}
	return &pageReturner{every: max(rows/32, 1)}
}

// wrote counts a row written, and every p.every rows starts a collection
// that returns the free pages, unless the last is still running. It does
// not wait for it: the caller holds the lock the provider's other answers
// are written under.
func (p *pageReturner) wrote() {
	if p == nil {
		return
	}
	if p.written++; p.written%p.every != 0 || !p.busy.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer p.busy.Store(false)
		freeOSMemory()
	}()
}

// freeOSMemory is debug.FreeOSMemory; a variable, so that a test can count
// the calls.
var freeOSMemory = debug.FreeOSMemory

// gcPercent is the collector's percentage (-1: off), read as liveHeap
// reads the heap: setting it to read it would wait for a collection
// under way to finish.
func gcPercent() int {
	v, ok := runtimeUint64("/gc/gogc:percent")
	if !ok {
		return 100
	}
	return int(int32(v)) // the runtime's int32, -1 included
}

// lowerGCPercent sets the collector's percentage to pct unless it is
// lower already (a stricter GOGC stays).
func lowerGCPercent(pct int) {
	if was := debug.SetGCPercent(pct); was < pct {
		debug.SetGCPercent(was)
	}
}

// rebuildSlack is the garbage, in bytes, a rebuild's embedding may add
// to its heap before the collector runs (boundGarbage); a variable, so
// that a test can have it lower the percentage on a small heap.
var rebuildSlack uint64 = 32 << 20

// liveHeap is the heap the last collection found live; a variable, so
// that a test can have makeRoom see a heap of its choosing.
var liveHeap = func() uint64 {
	v, _ := runtimeUint64("/gc/heap/live:bytes")
	return v
}

// runtimeUint64 reads the runtime's metric name, which this Go may not
// have.
func runtimeUint64(name string) (uint64, bool) {
	s := []rtmetrics.Sample{{Name: name}}
	rtmetrics.Read(s)
	if s[0].Value.Kind() != rtmetrics.KindUint64 {
		return 0, false
	}
	return s[0].Value.Uint64(), true
}

// Current returns the published snapshot, or nil before the first build.
func (s *Service) Current() *Snapshot { return s.cur.Load() }

// need is what the memory rule (package sizing) reads of snap: its
// catalog, and each distinct view's.
func (s *Service) need(snap *Snapshot) sizing.Catalog {
	dim := snap.query.Info().Dimensions
	if snap.Semantic() {
		dim = snap.Matrix.Dim()
	}
	_, local := s.cfg.Embedder.(fitter)
	c := sizing.Catalog{Tools: snap.Catalog.Len(), TextBytes: snap.Catalog.Bytes(), Dim: dim, Local: local, VectorBytes: builtBytes(snap)}
	for _, v := range snap.distinctViews() {
		c.Views = append(c.Views, sizing.Catalog{Tools: v.Catalog.Len(), TextBytes: v.Catalog.Bytes(), Dim: dim, Local: local, VectorBytes: builtBytes(v)})
	}
	return c
}

// builtBytes is what snap's vectors hold, for the rule to count in place
// of its dense figure; 0 (counted dense) when snap has none, or only their
// sign codes, since the next build makes them whole again.
func builtBytes(snap *Snapshot) int64 {
	if !snap.Semantic() || snap.Matrix.Sketched() {
		return 0
	}
	return snap.Matrix.Bytes()
}

// checkMemory sets the gauge of what snap's catalog needs at its peak,
// and warns when the container's memory limit is under it: its next
// rebuild with every text changed, a catalog report beside it and the
// connections held, may be OOM-killed. Once for each figure over the
// limit, not at every rebuild of the same catalog (learning's come every
// minute).
func (s *Service) checkMemory(snap *Snapshot) {
	need := s.need(snap)
	peak := need.Limit(s.cfg.Connections, s.cfg.TLS, s.cfg.BodyBudget)
	s.metrics.needed.Set(float64(peak))
	if s.cfg.MemoryLimit <= 0 || peak <= s.cfg.MemoryLimit || s.warnedNeed.Swap(peak) == peak {
		return
	}
	s.logger.Warn("the memory limit is under what this catalog needs at a rebuild's peak (docs/operations.md, Memory)",
		"limit_bytes", s.cfg.MemoryLimit, "needed_bytes", peak, "tools", need.Tools, "catalog_bytes", need.TextBytes, "dimensions", need.Dim)
}

// shareCatalog is setup with the catalog serving in its own's place when
// the two are the Same: a reload for a config change, or an operator's
// rebuild, that changed no tool. The copy just loaded is let go before
// the build, which would otherwise hold it beside the one serving (a
// same-tools rebuild of 100,000 tools through a provider peaked at 987
// MiB against 1,055, of 10,000 tools of 4,500 bytes at 356 against 417;
// BENCHMARKS.md, step 27), and the snapshots share one.
func (s *Service) shareCatalog(setup *Setup) *Setup {
	cur := s.cur.Load()
	if setup == nil || setup.Catalog == nil || cur == nil || cur.Catalog == setup.Catalog || !cur.Catalog.Same(setup.Catalog) {
		return setup
	}
	shared := *setup
	shared.Catalog = cur.Catalog
	return &shared
}

// Build indexes setup and publishes the result. All fallible work happens
// before anything is published, so a failure leaves the current snapshot
// serving. If only the embedding fails and no semantic snapshot is being
// served, a keyword-only snapshot is published (the endpoint stays up) and
// returned without error; its EmbedError says why.
func (s *Service) Build(ctx context.Context, setup *Setup) (*Snapshot, error) {
	s.buildMu.Lock()
	defer s.buildMu.Unlock()
	setup = s.shareCatalog(setup)
	// A build allocates its analysis, counts and vectors beside the
	// snapshot serving, most of it garbage within seconds; collecting at a
	// quarter of the live heap instead of all of it keeps the peak near
	// what the two snapshots hold (about 150 MiB less at 100,000 tools).
	// A rebuild's live heap holds the snapshot serving as well, about as
	// large as the one it builds: half the percentage gives its garbage
	// the same room, once the heap is large enough for that room to
	// matter. The setting is the process's, so searches served meanwhile
	// collect as often: a default catalog's rebuild under load answered
	// 15 % fewer searches at half, to save 2 MiB. A stricter setting
	// (GOGC) stays.
	//
	// A first build through the local embedder collects at the process's
	// own percentage: it fits and embeds in process, making about seven
	// times its index in garbage, and collecting at a quarter took a
	// fifth of its time (10,000 tools: 288-316 -> 228-247 ms), for a
	// start-up peak that stays under any rebuild's (10,000 tools 88 -> 92
	// MiB against 122; 100,000 tools 442 -> 534 against 698). A
	// provider's first build gained nothing measurable and kept more
	// pages once ready (10,000 tools of 4.5 KB: 196 -> 223 MiB), so it
	// collects as a rebuild does (BENCHMARKS.md, "A first local build
	// collects less often").
	//
	// Whatever the build lowers it to (boundGarbage and the views too),
	// the process's own percentage is back once it ends.
	defer debug.SetGCPercent(gcPercent())
	_, fitted := s.cfg.Embedder.(fitter)
	if serving := s.cur.Load() != nil; serving || !fitted {
		pct := buildGCPercent
		if serving && liveHeap() > rebuildGCFrom {
			pct = rebuildGCPercent
		}
		lowerGCPercent(pct)
	}
	start := s.cfg.Now()
	snap, err := s.build(ctx, setup)
	took := s.cfg.Now().Sub(start)
	dropped := s.dropped
	s.dropped = false
	if dropped && (err != nil || !snap.Semantic()) {
		// The index serving was let go for this build, which made none:
		// keyword ranking stays until a build does, and this build's
		// caller (an operator, learning) may retry nothing.
		select {
		case s.retry <- struct{}{}:
		default:
		}
	}
	s.metrics.buildSeconds.Observe(took.Seconds())
	if err != nil {
		if ctx.Err() != nil {
			// Stopped, not failed: the process is shutting down, or the
			// operator who asked for the rebuild went away. Status keeps
			// the last real error, and no alert counts this one.
			s.logger.Info("index build stopped", "reason", ctx.Err())
			return nil, err
		}
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
		case cur != nil && cur.setup == setup && !dropped:
			// A failed retry of the same setup: the keyword snapshot serving
			// is identical, so keep it (and its version).
			s.metrics.builds.WithLabelValues("degraded").Inc()
			return cur, nil
		}
	}
	snap.BuildTook = took
	s.cur.Store(snap)
	if snap.Semantic() {
		// Status must not show a retry pending beside the index that made
		// it unneeded (Run would clear it only after OnPublish's work).
		s.setNextRetry(time.Time{})
	}
	result := "ok"
	if !snap.Semantic() {
		result = "degraded"
	}
	s.metrics.builds.WithLabelValues(result).Inc()
	s.metrics.published(snap)
	s.checkMemory(snap)
	s.logger.Info("index snapshot published", "version", snap.Version, "tools", snap.Catalog.Len(),
		"mode", snap.mode(), "took_ms", took.Milliseconds(), "warnings", len(snap.Catalog.Warnings()),
		"skipped", len(snap.Catalog.Skipped()), "embedded", snap.Embedded, "from_snapshot_file", snap.Preloaded)
	if f := s.onPublish.Load(); f != nil {
		(*f)(snap)
	}
	if dropped && !snap.Semantic() {
		// Published, the new catalog ranked by keywords, but a failure:
		// Follow retries one with backoff.
		return snap, fmt.Errorf("%w, and %w: the new catalog is ranked by keywords until a rebuild makes one: %s", ErrEmbedFailed, ErrDropped, snap.EmbedError)
	}
	return snap, nil
}

// mode is what the snapshot can rank by at best. Status and logs have
// always said "semantic" for a snapshot with a dense index.
func (snap *Snapshot) mode() Mode {
	if snap.Semantic() {
		return ModeSemantic
	}
	return ModeKeyword
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
	if s.learner != nil {
		s.learner.load(ctx) // a store that is down: the index learns nothing yet
	}
	for {
		if cur := s.cur.Load(); cur != nil && cur.setup != nil {
			setup = cur.setup
		}
		attempt := setup
		var loadErr error
		if attempt == nil && s.cfg.Load != nil {
			if attempt, loadErr = s.cfg.Load(ctx); loadErr != nil {
				// Recorded as Rebuild records it; a build of no setup
				// would only record "no catalog" over the cause.
				s.metrics.builds.WithLabelValues("error").Inc()
				s.recordError(loadErr)
			}
		}
		if loadErr == nil {
			if snap, err := s.Build(ctx, attempt); err == nil && snap.Semantic() {
				s.setNextRetry(time.Time{})
				return nil
			}
		}
		if cur := s.cur.Load(); cur != nil && cur.Semantic() {
			s.setNextRetry(time.Time{})
			return nil // an operator's rebuild got there first
		}
		s.setNextRetry(s.cfg.Now().Add(delay).UTC())
		if err := pause.For(ctx, delay); err != nil {
			return err
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

// Follow rebuilds after each signal on changed (an upstream's tools
// changed, or what was learned) until ctx is done, paced: a rebuild
// starts at least FollowGap after the last one started, and followIdle
// times its duration after it ended; changes meanwhile are read by that
// one rebuild. A rebuild that fails, because the provider is down or the
// catalog is briefly invalid, leaves the change pending: it is retried
// with capped exponential backoff until one succeeds, and status says
// pending_changes meanwhile. A new change retries as soon as the pace
// allows. So does a build of anyone's that let the serving index go for
// the memory limit and made none (Build), when no retry is due.
func (s *Service) Follow(ctx context.Context, changed <-chan struct{}) {
	var retry <-chan time.Time
	delay := s.cfg.RetryDelay
	var next time.Time // the earliest start of the next rebuild
	for {
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-retry:
		case <-s.retryIf(retry == nil):
		}
		s.setPending(true)
		if pause.For(ctx, time.Until(next)) != nil {
			return
		}
		// The rebuild reads every change signalled so far, and retries
		// whatever asked for one.
		select {
		case <-changed:
		default:
		}
		select {
		case <-s.retry:
		default:
		}
		start := time.Now()
		// A failure is logged and shown in status by Build; the current
		// snapshot keeps serving.
		_, err := s.Rebuild(ctx)
		took := time.Since(start)
		next = start.Add(max(s.cfg.FollowGap, took+followIdle*took))
		if err == nil {
			s.setPending(false)
			s.setNextRetry(time.Time{})
			retry, delay = nil, s.cfg.RetryDelay
			continue
		}
		if ctx.Err() != nil {
			return
		}
		s.setNextRetry(s.cfg.Now().Add(delay).UTC())
		retry = time.After(delay)
		delay = min(delay*2, maxRetryDelay)
	}
}

// retryIf is the signal of a build that let the serving index go and
// made none (Build), when Follow has no retry of its own due; nil, which
// never signals, when it has, so that its backoff holds.
func (s *Service) retryIf(none bool) <-chan struct{} {
	if none {
		return s.retry
	}
	return nil
}

func (s *Service) setPending(p bool) {
	s.mu.Lock()
	s.pending = p
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
	if s.learner != nil {
		s.learner.load(ctx) // a rebuild holds what was learned until now
	}
	return s.Build(ctx, setup)
}
