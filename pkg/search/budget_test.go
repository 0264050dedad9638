package search

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/toolsearch/toolsearch/pkg/access"
	"github.com/toolsearch/toolsearch/pkg/catalog"
	"github.com/toolsearch/toolsearch/pkg/embedding"
)

// spent records what a request spends of its budget, by work.
type spent map[access.Work]int

func (s spent) Spend(work access.Work, n int) error {
	s[work] += n
	return nil
}

func (s spent) Charge(work access.Work, n int) { s[work] += n }

// oneSpend allows one spend and refuses the next, as a budget does once
// that spend has put its caller in debt.
type oneSpend struct{ spends int }

func (b *oneSpend) Spend(access.Work, int) error {
	if b.spends++; b.spends > 1 {
		return &access.OverBudgetError{RetryAfter: time.Second, Rate: 1, Burst: 1}
	}
	return nil
}

func (b *oneSpend) Charge(access.Work, int) {}

// TestSearchSpends: a search pays, before ranking and beyond the
// request's own unit, for a ranking that costs more than a unit
// (UnitCost): a broad query's scan, or 16 intents each ranked apart over
// 50,000 tools (8 to 10 ms). A short query pays nothing more; keyword
// mode reads a few postings lists and ranks no intent apart; semantic
// mode scores no postings and fuses nothing. A search pays once: a second
// spend would be refused once the first put its caller in debt, after
// both were paid for (intents priced apart from the scan were).
func TestSearchSpends(t *testing.T) {
	const n = 50_000
	svc := New(Config{Embedder: embedding.NewLocal(0)})
	if _, err := svc.Build(t.Context(), synthetic(t, n)); err != nil {
		t.Fatal(err)
	}
	var many []string
	for i := range 20 {
		many = append(many, fmt.Sprintf("send report number %d to the team", i))
	}
	manyIntents := strings.Join(many, ". ")
	broad := broadQuery(svc.cur.Load().Catalog, 500)
	for _, tt := range []struct {
		name string
		req  Request
		want spent
	}{
		{"one intent", Request{Query: "send the weekly report to the team"}, spent{}},
		{"16 intents ranked apart", Request{Query: manyIntents}, spent{access.WorkScan: 1}},
		{"16 intents of broad words", Request{Query: intentsQuery(svc.cur.Load().Catalog, 16)}, spent{access.WorkScan: 3}},
		{"keyword mode ranks none apart", Request{Query: manyIntents, Mode: ModeKeyword}, spent{}},
		{"a broad query", Request{Query: broad}, spent{access.WorkScan: 2}},
		{"a broad query, semantic", Request{Query: broad, Mode: ModeSemantic}, spent{access.WorkScan: 1}},
		{"a broad query, keyword", Request{Query: broad, Mode: ModeKeyword}, spent{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := spent{}
			if _, err := svc.Search(access.WithBudget(t.Context(), b), tt.req, access.Caller{}); err != nil {
				t.Fatal(err)
			}
			for w, u := range b {
				if u == 0 {
					delete(b, w)
				}
			}
			if fmt.Sprint(b) != fmt.Sprint(tt.want) {
				t.Errorf("spent %v, want %v", b, tt.want)
			}
			if _, err := svc.Search(access.WithBudget(t.Context(), &oneSpend{}), tt.req, access.Caller{}); err != nil {
				t.Errorf("refused after its first spend: %v", err)
			}
		})
	}
}

// broadQuery is a query of words distinct words of cat's descriptions,
// one intent: it reads most of a local index's columns, and most tools
// match it.
func broadQuery(cat *catalog.Catalog, words int) string {
	seen := map[string]bool{"and": true, "then": true}
	var out []string
	for _, tool := range cat.Tools() {
		for _, w := range strings.Fields(strings.ToLower(tool.Description)) {
			if w = strings.Trim(w, ".,;:()'\"`"); w != "" && !seen[w] && len(out) < words {
				seen[w] = true
				out = append(out, w)
			}
		}
	}
	return strings.Join(out, " ")
}

// intentsQuery is a query of n sentences of 8 distinct words of cat's
// descriptions each: n intents, each ranked apart in hybrid mode.
func intentsQuery(cat *catalog.Catalog, n int) string {
	words := strings.Fields(broadQuery(cat, 8*n))
	var sents []string
	for i := 0; i+8 <= len(words); i += 8 {
		sents = append(sents, strings.Join(words[i:i+8], " "))
	}
	return strings.Join(sents, ". ") + "."
}

// A search pays a unit for each UnitCost its scan begins, less the one
// its request paid.
func TestScanUnits(t *testing.T) {
	for _, tt := range []struct {
		cost time.Duration
		want int
	}{
		{0, 0}, {time.Microsecond, 0}, {UnitCost, 0}, {UnitCost + 1, 1}, {2 * UnitCost, 1}, {22 * time.Millisecond, 4},
	} {
		if got := scanUnits(tt.cost); got != tt.want {
			t.Errorf("scanUnits(%v) = %d, want %d", tt.cost, got, tt.want)
		}
	}
}
