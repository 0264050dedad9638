// Package search is the tool-search service: it builds index snapshots of a
// catalog, publishes them atomically, answers queries from whichever
// snapshot is current, and reports its own health.
package search

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolsearch/toolsearch/pkg/catalog"
	"github.com/toolsearch/toolsearch/pkg/embed"
	"github.com/toolsearch/toolsearch/pkg/index"
)

// Embedder turns texts into vectors. embed.Local and embed.OpenAI satisfy it.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
	Info() embed.Info
}

// Limits on a request.
const (
	DefaultTopK         = 10
	MaxTopK             = 50
	DefaultQueryTimeout = 2 * time.Second
)

// ErrNotReady is returned by Search before the first snapshot is published.
var ErrNotReady = errors.New("search: index not ready")

// Config holds the service's dependencies. Zero values are documented
// defaults.
type Config struct {
	// Load returns the catalog to index. It is called for every build, so a
	// rebuild picks up edited files.
	Load     func(ctx context.Context) (*catalog.Catalog, error)
	Embedder Embedder
	// QueryTimeout bounds the embedding of one query; DefaultQueryTimeout when 0.
	QueryTimeout time.Duration
	// Version is the binary's version, reported in status.
	Version string
	// Registerer receives the service's metrics; nil registers nowhere.
	Registerer prometheus.Registerer
	// Logger receives build events; nil discards.
	Logger *slog.Logger
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Snapshot is one immutable, searchable build of the catalog. Everything a
// query needs is in it, so a query never mixes two builds.
type Snapshot struct {
	Catalog   *catalog.Catalog
	Matrix    *index.Matrix
	Version   string
	BuiltAt   time.Time
	BuildTook time.Duration
	// query embeds queries the way the rows were embedded (for the local
	// embedder, with the IDF weights fitted to this catalog).
	query Embedder
}

// Service builds and serves snapshots. It is safe for concurrent use;
// Search never waits for a build.
type Service struct {
	cfg     Config
	logger  *slog.Logger
	metrics *metrics
	cur     atomic.Pointer[Snapshot]
	buildMu sync.Mutex // one build at a time
	seq     atomic.Int64

	mu          sync.Mutex // guards the fields below
	lastErr     string
	lastErrAt   time.Time
	nextRetryAt time.Time
	warnings    []catalog.Warning
	sources     []string
}

// New returns a service with no snapshot; call Build or Run to make one.
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
	return &Service{
		cfg:     cfg,
		logger:  cfg.Logger.With("component", "search"),
		metrics: newMetrics(cfg.Registerer),
	}
}

// Current returns the published snapshot, or nil before the first build.
func (s *Service) Current() *Snapshot { return s.cur.Load() }

// Build loads the catalog, embeds every tool in one batch, and publishes the
// new snapshot. On failure the previous snapshot keeps serving and the error
// is recorded for status.
func (s *Service) Build(ctx context.Context) (*Snapshot, error) {
	s.buildMu.Lock()
	defer s.buildMu.Unlock()
	start := s.cfg.Now()
	snap, err := s.build(ctx)
	took := s.cfg.Now().Sub(start)
	s.metrics.buildSeconds.Observe(took.Seconds())
	if err != nil {
		s.metrics.builds.WithLabelValues("error").Inc()
		s.recordError(err)
		return nil, err
	}
	snap.BuildTook = took
	s.cur.Store(snap)
	s.metrics.builds.WithLabelValues("ok").Inc()
	s.metrics.size.Set(float64(snap.Catalog.Len()))
	s.metrics.bytes.Set(float64(snap.Matrix.Bytes()))
	s.mu.Lock()
	s.nextRetryAt = time.Time{}
	s.mu.Unlock()
	s.logger.Info("index snapshot published", "version", snap.Version, "tools", snap.Catalog.Len(),
		"dimensions", snap.Matrix.Dim(), "took_ms", took.Milliseconds(), "warnings", len(snap.Catalog.Warnings()))
	return snap, nil
}

func (s *Service) build(ctx context.Context) (*Snapshot, error) {
	cat, err := s.cfg.Load(ctx)
	if err != nil {
		return nil, fmt.Errorf("load catalog: %w", err)
	}
	s.mu.Lock()
	s.sources = cat.Sources()
	s.warnings = cat.Warnings()
	s.mu.Unlock()
	texts := make([]string, cat.Len())
	for i, t := range cat.Tools() {
		texts[i] = t.Text()
	}
	query := s.cfg.Embedder
	if l, ok := query.(*embed.Local); ok {
		query = l.Fit(texts)
	}
	vecs, err := query.Embed(ctx, texts)
	if err != nil {
		return nil, fmt.Errorf("embed %d tools: %w", len(texts), err)
	}
	mx, err := index.New(vecs)
	if err != nil {
		return nil, err
	}
	if mx.Rows() != cat.Len() {
		return nil, fmt.Errorf("index has %d rows for %d tools", mx.Rows(), cat.Len())
	}
	return &Snapshot{
		Catalog: cat,
		Matrix:  mx,
		Version: s.version(cat, query.Info()),
		BuiltAt: s.cfg.Now().UTC(),
		query:   query,
	}, nil
}

// version names a snapshot: a build counter and a fingerprint of what was
// indexed, so two replicas serving the same catalog and model agree on the
// fingerprint part.
func (s *Service) version(cat *catalog.Catalog, info embed.Info) string {
	h := sha256.Sum256([]byte(strings.Join([]string{cat.Hash(), info.Provider, info.Model, fmt.Sprint(info.Dimensions)}, "\x00")))
	return fmt.Sprintf("%d-%s", s.seq.Add(1), hex.EncodeToString(h[:4]))
}

func (s *Service) recordError(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastErr = err.Error()
	s.lastErrAt = s.cfg.Now().UTC()
	s.logger.Error("index build failed", "err", err)
}

// Run builds the first snapshot, retrying with capped exponential backoff
// until one is published or ctx is done. It returns nil once a snapshot is
// published, and ctx's error if it never is.
func (s *Service) Run(ctx context.Context) error {
	delay := time.Second
	const maxDelay = 2 * time.Minute
	for {
		if _, err := s.Build(ctx); err == nil {
			return nil
		}
		s.mu.Lock()
		s.nextRetryAt = s.cfg.Now().Add(delay).UTC()
		s.mu.Unlock()
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		delay = min(delay*2, maxDelay)
	}
}
