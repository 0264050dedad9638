package access

import (
	"context"
	"fmt"
	"math"
	"time"
)

// Budget is the work a caller may ask of the service, in units of about
// one search. The HTTP layer admits each request for one unit; a request
// whose work grows past a search's with the catalog (a regex reading
// megabytes of names, a catalog report linting every tool and searching
// twice for each one it audits) spends the rest where that work is done,
// before doing it; so does a search that reads much of a large index (a
// query of many words, a provider's dense vectors). A rate limit that counted requests alone let one key
// keep a core busy with requests priced like searches: a report of 500
// tools of 100,000 was 1,000 searches' work for two units.
type Budget interface {
	// Spend takes units for work, into debt if need be, or refuses with
	// an *OverBudgetError when the caller is in debt already.
	Spend(work Work, units int) error
	// Charge takes units for work, into debt if need be, and never
	// refuses: for the parts of work already begun (Committed).
	Charge(work Work, units int)
}

// Work names what a request spends beyond its own unit, for the metrics
// that show an operator where a budget goes: one of Works, never a
// caller's words.
type Work string

// The work that is priced.
const (
	WorkScan   Work = "scan"   // a search's ranking, its intents too, past a unit's
	WorkRegex  Work = "regex"  // the text a regex search reads
	WorkReport Work = "report" // a catalog report's lint and audit
	WorkBody   Work = "body"   // a request body's bytes past a search's
)

// Works is every Work.
var Works = []Work{WorkScan, WorkRegex, WorkReport, WorkBody}

type budgetKey struct{}

// WithBudget returns ctx carrying the caller's budget.
func WithBudget(ctx context.Context, b Budget) context.Context {
	return context.WithValue(ctx, budgetKey{}, b)
}

// committed is a budget whose work has begun: it charges, never refuses.
type committed struct{ Budget }

// Committed returns ctx whose budget charges for the parts of work that
// its caller has admitted as a whole, and never refuses one (a catalog
// report's audit searches): once the first part has put the caller in
// debt, refusing the rest would waste what was done, and not charging
// them would price every part alike, whatever it cost.
func Committed(ctx context.Context) context.Context {
	b, ok := ctx.Value(budgetKey{}).(Budget)
	if !ok {
		return ctx
	}
	if _, ok := b.(committed); ok {
		return ctx
	}
	return context.WithValue(ctx, budgetKey{}, committed{b})
}

// Spend takes units for work from the budget in ctx. Without one (no
// rate limit is configured, or the work is the service's own) it allows.
func Spend(ctx context.Context, work Work, units int) error {
	b, ok := ctx.Value(budgetKey{}).(Budget)
	if !ok || units <= 0 {
		return nil
	}
	if c, ok := b.(committed); ok {
		c.Charge(work, units)
		return nil
	}
	return b.Spend(work, units)
}

// Charge takes units for work done already from the budget in ctx, into
// debt if need be: the caller's next request waits for it.
func Charge(ctx context.Context, work Work, units int) {
	if b, ok := ctx.Value(budgetKey{}).(Budget); ok && units > 0 {
		b.Charge(work, units)
	}
}

// OverBudgetError refuses a request of a caller that asked for more work
// than its budget allows, saying when to ask again.
type OverBudgetError struct {
	RetryAfter time.Duration
	Rate       float64 // units a second
	Burst      int
	// Site is set when the budget that refused is the one the anonymous
	// callers of an IPv6 /48 share, not the caller's own.
	Site bool
	// Crowded is set when it is the one anonymous callers new to the
	// service share while it keeps as many callers' budgets as it can,
	// each still holding spent work.
	Crowded bool
}

// RetrySeconds is RetryAfter in whole seconds, rounded up, at least one:
// what a Retry-After header says.
func (e *OverBudgetError) RetrySeconds() int {
	return max(1, int(math.Ceil(e.RetryAfter.Seconds())))
}

func (e *OverBudgetError) Error() string {
	if e.Crowded {
		scope := "anonymous callers"
		if e.Site {
			scope = "anonymous IPv6 sites"
		}
		return fmt.Sprintf("more than the %g units of work a second (bursts of %d) that %s new to this service share while it tracks as many busy ones as it can; "+
			"an API key has a budget of its own (docs/configuration.md, \"Rate limits\"); retry after %d s", e.Rate, e.Burst, scope, e.RetrySeconds())
	}
	if e.Site {
		return fmt.Sprintf("more than the %g units of work a second (bursts of %d) that the anonymous callers of this IPv6 /48 share; "+
			"an API key has a budget of its own (docs/configuration.md, \"Rate limits\"); retry after %d s", e.Rate, e.Burst, e.RetrySeconds())
	}
	return fmt.Sprintf("more than this caller's %g units of work a second (bursts of %d): a short search is one unit; "+
		"a search reading much of a large index, a regex over much text, a query of many intents and a catalog report cost more (docs/configuration.md, \"Rate limits\"); retry after %d s",
		e.Rate, e.Burst, e.RetrySeconds())
}
