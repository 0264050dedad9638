package httpapi

import (
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// Refused requests' access lines are budgeted: a caller can send requests
// that are refused (a wrong key, a spent budget, a malformed body; 503
// while the first index builds or the process drains) as fast as the
// network carries them, about 40,000 a second here, and each made an INFO
// line, so a flood pushed every other line out of a pod's rotated log
// within seconds. Past refusalLinesRate a second, after a burst of
// refusalLinesBurst, they are counted instead, and the count is logged at
// most every refusalSummaryEvery. toolsearch_http_requests_total still
// counts every request, and internal errors (500, a fault of the
// service's, with its own error line) are always logged.
const (
	refusalLinesRate    = 10
	refusalLinesBurst   = 100
	refusalSummaryEvery = 10 * time.Second
)

var refusalWhy = fmt.Sprintf("refused requests (4xx, 503) past %d lines a second; toolsearch_http_requests_total counts every request", refusalLinesRate)

// refusalLines is that budget.
type refusalLines struct {
	lim        *rate.Limiter
	suppressed atomic.Int64
	mu         sync.Mutex // orders summaries
	summarised time.Time  // when the last summary was logged
}

func newRefusalLines() *refusalLines {
	return &refusalLines{lim: rate.NewLimiter(refusalLinesRate, refusalLinesBurst)}
}

// admit reports whether a refused request's line is logged at now, and
// counts it when not.
func (l *refusalLines) admit(now time.Time) bool {
	if l.lim.AllowN(now, 1) {
		return true
	}
	l.suppressed.Add(1)
	return false
}

// summarise logs how many lines went unlogged, when any did and the last
// summary is refusalSummaryEvery old; it is called before a line is logged,
// so the count comes out once refusals slow down, or every
// refusalSummaryEvery while some are let through. The clock is read only
// then: every answer's line passes here.
func (l *refusalLines) summarise(logger *slog.Logger, clock func() time.Time) {
	if l.suppressed.Load() == 0 {
		return
	}
	now := clock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.summarised) < refusalSummaryEvery {
		return
	}
	if n := l.suppressed.Swap(0); n > 0 {
		l.summarised = now
		logger.Warn("request lines not logged", "count", n, "why", refusalWhy)
	}
}
