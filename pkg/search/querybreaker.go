package search

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/toolsearch/toolsearch/pkg/embedding"
	"github.com/toolsearch/toolsearch/pkg/internal/breaker"
)

// A provider that fails query after query is not asked again until its
// breaker lets a probe through: while it hung, every search waited out
// the query timeout (2 s) before its keyword answer, and one rate-limiting
// was sent every search's query all the same. Three failures in a row
// open it, for a second at first, doubling to half a minute; one search
// at a time probes then, and its success closes it. A query found in the
// query cache is answered whatever the breaker's state.
const (
	queryBreakerFailures = 3
	queryBreakerFirst    = time.Second
	queryBreakerMost     = 30 * time.Second
)

// providerFailingReason is the diagnostic.embedding_reason of a query not
// sent to the provider because its breaker is open.
const providerFailingReason = "provider_failing"

// errProviderFailing is the error of a query the breaker kept from the
// provider.
var errProviderFailing = errors.New("the embedding provider failed the queries before this one; it is not asked again until a probe finds it answering")

// queryBreaker guards the provider's query embeddings.
type queryBreaker struct {
	mu sync.Mutex
	br breaker.Breaker
}

func newQueryBreaker() *queryBreaker {
	return &queryBreaker{br: breaker.New(queryBreakerFailures, queryBreakerFirst, queryBreakerMost)}
}

// embedQueryText embeds one query's parts, in one call, through the
// breaker: its text, or a conversation's ask and its earlier turns' words,
// the second's vector added at weight to the first's (combine).
func (s *Service) embedQueryText(ctx context.Context, e Embedder, parts []string, weight float64) ([]float32, error) {
	b := s.qbreaker
	b.mu.Lock()
	allowed := b.br.Allow(s.cfg.Now())
	b.mu.Unlock()
	if !allowed {
		return nil, errProviderFailing
	}
	vecs, err := s.embed(ctx, e, "query", parts)
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case err == nil:
		b.br.Success()
		return combine(vecs, weight), nil
	case errors.Is(err, context.Canceled), embedding.Reason(err) == "client_error":
		// The caller went away, or the provider refused this query (too
		// long for its model, say): nothing learned of the provider, and
		// a caller sending such queries must not keep it from everyone.
		b.br.Neutral()
	default:
		// Logged as it opens, not at each failed probe of a long outage.
		if b.br.Failure(s.cfg.Now()) && b.br.Failures() == queryBreakerFailures {
			s.logger.Warn("the embedding provider failed queries in a row: searches are ranked by keywords without asking it until a probe finds it answering",
				"failures", b.br.Failures(), "reason", embedding.Reason(err))
		}
	}
	return nil, err
}

// state is the breaker's state, for status.
func (b *queryBreaker) state(now time.Time) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.br.State(now)
}
