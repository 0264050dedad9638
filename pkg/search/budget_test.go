package search

import (
	"fmt"
	"strings"
	"testing"

	"github.com/toolsearch/toolsearch/pkg/access"
	"github.com/toolsearch/toolsearch/pkg/embedding"
)

// spent records what a request spends of its budget.
type spent struct{ units []int }

func (s *spent) Spend(work access.Work, n int) error {
	if work != access.WorkIntents {
		return fmt.Errorf("a search spent for %s", work)
	}
	s.units = append(s.units, n)
	return nil
}

// TestSearchSpendsForIntents: a hybrid search of many intents pays a
// quarter unit an intent at 100,000 tools (here 25,000: a unit for 16),
// before ranking; one intent, and keyword mode, which ranks none apart,
// pay nothing beyond the request's own unit.
func TestSearchSpendsForIntents(t *testing.T) {
	const n = 25_000
	svc := New(Config{Embedder: embedding.NewLocal(64)})
	if _, err := svc.Build(t.Context(), synthetic(t, n)); err != nil {
		t.Fatal(err)
	}
	var many []string
	for i := range 20 {
		many = append(many, fmt.Sprintf("send report number %d to the team", i))
	}
	manyIntents := strings.Join(many, ". ")
	for _, tt := range []struct {
		name  string
		req   Request
		units int
	}{
		{"one intent", Request{Query: "send the weekly report to the team"}, 0},
		{"16 intents ranked apart", Request{Query: manyIntents}, 16 * n / (4 * UnitTools)},
		{"keyword mode ranks none apart", Request{Query: manyIntents, Mode: ModeKeyword}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := &spent{}
			if _, err := svc.Search(access.WithBudget(t.Context(), b), tt.req, access.Caller{}); err != nil {
				t.Fatal(err)
			}
			total := 0
			for _, u := range b.units {
				total += u
			}
			if total != tt.units {
				t.Errorf("spent %v, want %d units in all", b.units, tt.units)
			}
		})
	}
}
