package search

import (
	"context"
	"fmt"
	"strings"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/toolsearch/toolsearch/pkg/access"
	"github.com/toolsearch/toolsearch/pkg/embedding"
	"github.com/toolsearch/toolsearch/pkg/internal/breaker"
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
// entries survive rebuilds. Entries are kept apart per API key (see
// queryKey): a hit is visibly faster, so a shared entry would tell one
// key what another key asked, or the words of tools it cannot see.
type queryCache struct {
	// A plain LRU with the expiry in each entry: golang-lru's expirable
	// variant runs a cleanup goroutine per cache that cannot be stopped.
	lru    *lru.Cache[[32]byte, cachedVec]
	ttl    time.Duration
	now    func() time.Time
	flight singleflight.Group
	m      *metrics
}

type cachedVec struct {
	vec     []float32
	expires time.Time
}

func newQueryCache(size int, ttl time.Duration, now func() time.Time, m *metrics) *queryCache {
	c, _ := lru.New[[32]byte, cachedVec](size) // size > 0, so no error
	return &queryCache{lru: c, ttl: ttl, now: now, m: m}
}

// queryKey is the cache key of a query's vector for tenant, the API key
// that asked (one tenant when keys are not configured): of its text, or of
// a conversation's ask and earlier words (embedQueryText's parts). Each
// part but the last is written after its length, so no two lists of parts
// share a key.
func queryKey(info embedding.Info, tenant string, parts ...string) [32]byte {
	var b strings.Builder
	fmt.Fprintf(&b, "%d:%s", len(tenant), tenant)
	for _, p := range parts[:len(parts)-1] {
		fmt.Fprintf(&b, "\x01%d:%s", len(p), p)
	}
	b.WriteString("\x00")
	b.WriteString(parts[len(parts)-1])
	return cacheKeys(info, b.String())[0]
}

func (c *queryCache) get(key [32]byte) ([]float32, bool) {
	e, ok := c.lru.Get(key)
	if !ok {
		return nil, false
	}
	if c.now().After(e.expires) {
		c.lru.Remove(key)
		return nil, false
	}
	return e.vec, true
}

// embed returns the vector of a query's parts (embedQueryText's) from the
// cache, from a call already in flight for the same parts, or from a new
// call. weight is the ask's own (contextWeight), so the parts' key is the
// vector's. The shared call runs on a context detached from any one caller
// (bounded by timeout), so a caller that leaves does not fail the others
// waiting on it.
func (c *queryCache) embed(ctx context.Context, s *Service, e Embedder, tenant string, parts []string, weight float64, timeout time.Duration) ([]float32, error) {
	key := queryKey(e.Info(), tenant, parts...)
	if v, ok := c.get(key); ok {
		c.m.queryCache.WithLabelValues("hit").Inc()
		return v, nil
	}
	c.m.queryCache.WithLabelValues("miss").Inc()
	ch := c.flight.DoChan(string(key[:]), func() (any, error) {
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
		defer cancel()
		vec, err := s.embedQueryText(fctx, e, parts, weight)
		if err != nil {
			return nil, err
		}
		c.lru.Add(key, cachedVec{vec: vec, expires: c.now().Add(c.ttl)})
		return vec, nil
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

// Warm embeds the texts of queries not yet in the query cache, in one
// batch (which the embedder splits by its batch size), so that a run of
// many searches, the catalog audit's, makes one provider call instead of
// one a query. It does nothing for an in-process embedder or with the
// cache off, or while the query breaker keeps queries from the provider
// (the batch would wait out a failing provider's timeout before the audit
// began). A failure is not reported: each search then embeds alone, or
// falls back and says why.
func (s *Service) Warm(ctx context.Context, caller access.Caller, queries []string) {
	c, snap := s.queries, s.cur.Load()
	if c == nil || snap == nil || !snap.Semantic() || s.qbreaker.state(s.cfg.Now()) != breaker.Closed {
		return
	}
	info := snap.query.Info()
	var texts []string
	var keys [][32]byte
	seen := map[[32]byte]bool{}
	for _, q := range queries {
		text := parseQuery(q).text
		key := queryKey(info, caller.Key, text)
		if _, cached := c.get(key); cached || seen[key] || text == "" {
			continue
		}
		seen[key] = true
		texts, keys = append(texts, text), append(keys, key)
	}
	if len(texts) == 0 {
		return
	}
	vecs, err := s.embed(ctx, snap.query, "query", texts)
	if err != nil {
		return
	}
	expires := c.now().Add(c.ttl)
	for i, key := range keys {
		c.lru.Add(key, cachedVec{vec: vecs[i], expires: expires})
	}
}
