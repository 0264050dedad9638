package search

import (
	"context"
	"fmt"
	"time"

	"github.com/toolsearch/toolsearch/pkg/embed"
)

// Request is a validated search request.
type Request struct {
	Query string
	TopK  int // 1..MaxTopK; DefaultTopK when 0
}

// Hit is one ranked tool.
type Hit struct {
	Name        string  `json:"name"`
	Server      string  `json:"server"`
	Description string  `json:"description"`
	Score       float32 `json:"score"`
	Row         int     `json:"-"` // the tool's position in the snapshot's catalog
}

// Result is a ranked answer and the snapshot that gave it.
type Result struct {
	Tools        []Hit
	Mode         string // "semantic"
	IndexVersion string
	Took         time.Duration
}

// Search ranks the current snapshot's tools against the query. It returns
// ErrNotReady before the first build.
func (s *Service) Search(ctx context.Context, req Request) (Result, error) {
	start := time.Now()
	snap := s.cur.Load() // one load: the whole answer comes from this snapshot
	if snap == nil {
		return Result{}, ErrNotReady
	}
	k := req.TopK
	if k <= 0 {
		k = DefaultTopK
	}
	hits, err := s.semantic(ctx, snap, req.Query, min(k, MaxTopK))
	if err != nil {
		return Result{}, err
	}
	s.metrics.searches.WithLabelValues("semantic").Inc()
	return Result{Tools: hits, Mode: "semantic", IndexVersion: snap.Version, Took: time.Since(start)}, nil
}

func (s *Service) semantic(ctx context.Context, snap *Snapshot, query string, k int) ([]Hit, error) {
	qctx, cancel := context.WithTimeout(ctx, s.cfg.QueryTimeout)
	defer cancel()
	vecs, err := snap.query.Embed(qctx, []string{query})
	if err == nil {
		_, err = embed.Validate(vecs, 1, snap.Matrix.Dim())
	}
	if err != nil {
		s.metrics.embedErrors.Inc()
		return nil, fmt.Errorf("embed query: %w", err)
	}
	q := vecs[0]
	if embed.Normalize(q) == 0 {
		return []Hit{}, nil // nothing in the query the embedder knows: no evidence for any tool
	}
	matches, err := snap.Matrix.Search(ctx, q, k, nil)
	if err != nil {
		return nil, err
	}
	hits := make([]Hit, len(matches))
	for i, m := range matches {
		t := snap.Catalog.Tool(m.Row)
		hits[i] = Hit{Name: t.Name, Server: t.Server, Description: t.Description, Score: m.Score, Row: m.Row}
	}
	return hits, nil
}
