package search

import (
	"slices"
	"testing"
)

// TestMisspelledQueries: a query that misspells the catalog's words ranks
// as the query spelt right does, in every mode. Before, each of these
// found nothing confidently and put other tools first. What the catalog
// lacks stays absent: its words are English, not misspellings of the
// catalog's.
func TestMisspelledQueries(t *testing.T) {
	svc := newService(t, nil)
	if _, err := svc.Rebuild(t.Context()); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ misspelt, right string }{
		{"sedn a mesage to slakc", "send a message to slack"},
		{"serch githb issues", "search github issues"},
		{"craete a calendar evnet", "create a calendar event"},
		{"qeury the postgers databse", "query the postgres database"},
		// Each sentence is ranked apart as well, from the same reading.
		{"Sedn a mesage to slakc. Then craete a calendar evnet.", "Send a message to slack. Then create a calendar event."},
	}
	for _, mode := range []Mode{ModeKeyword, ModeSemantic, ModeHybrid} {
		for _, tt := range tests {
			want := mustSearch(t, svc, Request{Query: tt.right, Mode: mode, TopK: ptr(3)})
			got := mustSearch(t, svc, Request{Query: tt.misspelt, Mode: mode, TopK: ptr(3)})
			if !slices.Equal(ids(got.Tools), ids(want.Tools)) {
				t.Errorf("%s %q: %v; %q: %v", mode, tt.misspelt, ids(got.Tools), tt.right, ids(want.Tools))
			}
			if mode == ModeHybrid && (got.Confident == nil || !*got.Confident || got.NoMatch) {
				t.Errorf("%s %q: confident %v, no_match %v", mode, tt.misspelt, got.Confident, got.NoMatch)
			}
		}
	}
	for _, q := range []string{"book a flight to Lisbon", "translate this paragraph into French"} {
		if res := mustSearch(t, svc, Request{Query: q, TopK: ptr(3)}); !res.NoMatch {
			t.Errorf("%q: no_match %v, want a query about what the catalog lacks to stay one", q, res.NoMatch)
		}
	}
}
