package httpapi

import (
	"fmt"
	"log"
	"log/slog"
	"strings"
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

// lineBudget is that budget. net/http's own error lines have one alike
// (ServerErrorLog).
type lineBudget struct {
	lim        *rate.Limiter
	suppressed atomic.Int64
	mu         sync.Mutex // orders summaries
	summarised time.Time  // when the last summary was logged
	// what lines the summary counts, and why they went unlogged.
	what, why string
}

func newRefusalLines() *lineBudget {
	return newLineBudget("request lines not logged",
		fmt.Sprintf("refused requests (4xx, 503) past %d lines a second; toolsearch_http_requests_total counts every request", refusalLinesRate))
}

func newLineBudget(what, why string) *lineBudget {
	return &lineBudget{lim: rate.NewLimiter(refusalLinesRate, refusalLinesBurst), what: what, why: why}
}

// admit reports whether a refused request's line is logged at now, and
// counts it when not.
func (l *lineBudget) admit(now time.Time) bool {
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
func (l *lineBudget) summarise(logger *slog.Logger, clock func() time.Time) {
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
		logger.Warn(l.what, "count", n, "why", l.why)
	}
}

// ServerErrorLog is net/http's error log for a listener, as warnings of
// logger. A caller can make net/http write such lines as fast as it can
// connect: each failed TLS handshake is one ("http: TLS handshake error
// from ADDR: EOF" for a load balancer's TCP check, a client that does not
// trust the certificate, a scanner). They are budgeted as refused
// requests' lines are, and handshakes counts every failed handshake.
func ServerErrorLog(logger *slog.Logger, handshakes incrementer) *log.Logger {
	w := &errorLines{logger: logger, handshakes: handshakes, now: time.Now,
		budget: newLineBudget("server error lines not logged",
			fmt.Sprintf("net/http's error lines (failed TLS handshakes among them) past %d a second; toolsearch_http_tls_handshake_errors_total counts every failed handshake", refusalLinesRate))}
	return log.New(w, "", 0)
}

// incrementer is the counter of failed handshakes (a prometheus.Counter).
type incrementer interface{ Inc() }

type errorLines struct {
	logger     *slog.Logger
	handshakes incrementer
	budget     *lineBudget
	now        func() time.Time
}

func (e *errorLines) Write(p []byte) (int, error) {
	line := strings.TrimSuffix(string(p), "\n")
	if strings.HasPrefix(line, "http: TLS handshake error") && e.handshakes != nil {
		e.handshakes.Inc()
	}
	if !e.budget.admit(e.now()) {
		return len(p), nil
	}
	e.budget.summarise(e.logger, e.now)
	e.logger.Warn(clip(line, maxErrorLine))
	return len(p), nil
}

// maxErrorLine bounds a net/http error line: they quote what a client
// sent on occasion.
const maxErrorLine = 1 << 10
