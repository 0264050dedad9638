// Package breaker is a circuit breaker counted in logical operations, for
// a service the process depends on: an upstream MCP server's calls, the
// embedding provider's queries.
package breaker

import "time"

// Breaker states.
const (
	Closed   = "closed"
	Open     = "open"
	HalfOpen = "half-open"
)

// Breaker is a circuit breaker counted in logical operations: a call or a
// refresh is one success or one failure however many transport steps it
// took (a dropped session, the reconnect, the retry). It opens after
// threshold consecutive failures; the first open period is minCooldown, and
// each failed probe doubles it up to maxCooldown, so a service back after
// a blip is tried again within about a second while one that stays down is
// asked less and less often. sony/gobreaker fixes one open period per
// breaker; this growth is the behaviour needed, and it is this small.
//
// It is not safe for concurrent use: its user's mutex guards it.
type Breaker struct {
	threshold   int
	minCooldown time.Duration
	maxCooldown time.Duration

	failures  int           // consecutive (Failures)
	cooldown  time.Duration // the next open period
	openUntil time.Time     // zero while closed
	probing   bool          // half-open and one attempt is in flight
}

// New is a closed breaker that opens after threshold consecutive
// failures, for minCooldown at first.
func New(threshold int, minCooldown, maxCooldown time.Duration) Breaker {
	minCooldown = min(minCooldown, maxCooldown)
	return Breaker{threshold: threshold, minCooldown: minCooldown, maxCooldown: maxCooldown, cooldown: minCooldown}
}

// Allow reports whether a call may go to the upstream now. Once the open
// period is over, the breaker is half-open and lets exactly one call
// through as a probe until that call's outcome is known.
func (b *Breaker) Allow(now time.Time) bool {
	switch {
	case b.openUntil.IsZero():
		return true
	case now.Before(b.openUntil), b.probing:
		return false
	}
	b.probing = true
	return true
}

// Success closes the breaker and resets the cooldown.
func (b *Breaker) Success() {
	b.failures, b.openUntil, b.probing, b.cooldown = 0, time.Time{}, false, b.minCooldown
}

// Failure counts a failed operation. It reports whether the breaker opened
// (again) because of it.
func (b *Breaker) Failure(now time.Time) bool {
	b.failures++
	if !b.probing && (!b.openUntil.IsZero() || b.failures < b.threshold) {
		return false // still closed, or already open: a failure while open does not extend it
	}
	b.openUntil = now.Add(b.cooldown)
	b.cooldown = min(2*b.cooldown, b.maxCooldown)
	b.probing = false
	return true
}

// Neutral ends a probe whose outcome says nothing about the upstream's
// health (a slow tool's timeout, the caller going away): the next call
// probes again.
func (b *Breaker) Neutral() { b.probing = false }

func (b *Breaker) State(now time.Time) string {
	switch {
	case b.openUntil.IsZero():
		return Closed
	case now.Before(b.openUntil):
		return Open
	}
	return HalfOpen
}

// Failures is how many operations in a row have failed.
func (b *Breaker) Failures() int { return b.failures }
