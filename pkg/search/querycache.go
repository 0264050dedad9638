package search

import (
	"context"
	"crypto/sha256"
	"fmt"
	"time"

	"github.com/hashicorp/golang-lru/v2/expirable"
	"golang.org/x/sync/singleflight"
)

// Defaults for the query embedding cache.
const (
	DefaultQueryCacheSize = 4096
	DefaultQueryCacheTTL  = 10 * time.Minute
)

// queryCache remembers query vectors from a remote embedder, so a repeated
// query makes no provider call, and merges concurrent identical queries
// into one call. Vectors depend on the embedder only, not the catalog, so
// entries survive rebuilds.
type queryCache struct {
	lru    *expirable.LRU[[32]byte, []float32]
	flight singleflight.Group
	m      *metrics
}

func newQueryCache(size int, ttl time.Duration, m *metrics) *queryCache {
	return &queryCache{lru: expirable.NewLRU[[32]byte, []float32](size, nil, ttl), m: m}
}

// embed returns text's vector from the cache, from a call already in
// flight for the same text, or from a new call. The shared call runs on a
// context detached from any one caller (bounded by timeout), so a caller
// that leaves does not fail the others waiting on it.
func (c *queryCache) embed(ctx context.Context, s *Service, e Embedder, text string, timeout time.Duration) ([]float32, error) {
	info := e.Info()
	key := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%s\x00%s\x00%d\x00%s", info.Provider, info.BaseURL, info.Model, info.Dimensions, text)))
	if v, ok := c.lru.Get(key); ok {
		c.m.queryCache.WithLabelValues("hit").Inc()
		return v, nil
	}
	c.m.queryCache.WithLabelValues("miss").Inc()
	ch := c.flight.DoChan(string(key[:]), func() (any, error) {
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
		defer cancel()
		vecs, err := s.embed(fctx, e, "query", []string{text})
		if err != nil {
			return nil, err
		}
		c.lru.Add(key, vecs[0])
		return vecs[0], nil
	})
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case r := <-ch:
		if r.Err != nil {
			return nil, r.Err
		}
		// Callers normalise in place: each gets its own copy.
		return append([]float32(nil), r.Val.([]float32)...), nil
	}
}
