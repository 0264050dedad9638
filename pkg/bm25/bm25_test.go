package bm25

import (
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/toolsearch/toolsearch/pkg/analysis"
	"github.com/toolsearch/toolsearch/pkg/catalog"
)

func testIndex(tb testing.TB) (*Index, *catalog.Catalog) {
	tb.Helper()
	cat, err := catalog.Default()
	if err != nil {
		tb.Fatal(err)
	}
	return catalogIndex(tb, cat), cat
}

func TestSearch(t *testing.T) {
	ix, cat := testIndex(t)
	tests := []struct {
		query string
		want  string
	}{
		{"merge pull request", "github/merge_pull_request"},
		{"jql", "jira/search_tickets"},
		{"fft", "compute/compute_fft"},
		{"slow queries", "postgres/list_slow_queries"},
		{"direct message", "slack/send_direct_message"},
	}
	for _, tt := range tests {
		got, err := ix.Prepare(tt.query, nil).Search(t.Context(), 3, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 || cat.Tool(got[0].Row).ID() != tt.want {
			t.Errorf("Search(%q) first = %v, want %s", tt.query, got, tt.want)
		}
	}
	if got, _ := ix.Prepare("the of and", nil).Search(t.Context(), 5, nil); len(got) != 0 {
		t.Errorf("stop words matched %d tools", len(got))
	}
	if got, _ := ix.Prepare("zzzqqq", nil).Search(t.Context(), 5, nil); len(got) != 0 {
		t.Errorf("an unknown word matched %d tools", len(got))
	}
}

// A word in the name must outrank the same word deep in a parameter.
func TestNameOutweighsParams(t *testing.T) {
	docs := []Doc{
		{Name: "list_files", Description: "List things in a folder.", Params: "filter: only entries tagged with a label"},
		{Name: "add_label", Description: "Attach a tag to an entry."},
	}
	ix := fromDocs(docs, DefaultConfig)
	got, _ := ix.Prepare("label", nil).Search(t.Context(), 2, nil)
	if len(got) != 2 || got[0].Row != 1 {
		t.Errorf("Search(label) = %v, want row 1 (name hit) first", got)
	}
	if m := ix.Prepare("label", nil).Matched(1); len(m["label"]) != 1 || m["label"][0] != "name" {
		t.Errorf("Matched = %v", m)
	}
}

func TestKeep(t *testing.T) {
	ix, cat := testIndex(t)
	keep := func(row int) bool { return cat.Tool(row).Server == "jira" }
	got, _ := ix.Prepare("comment on an issue", nil).Search(t.Context(), 10, keep)
	for _, m := range got {
		if cat.Tool(m.Row).Server != "jira" {
			t.Errorf("keep ignored: %s", cat.Tool(m.Row).ID())
		}
	}
	if len(got) == 0 {
		t.Error("no jira tool for a comment query")
	}
}

// Two query words side by side, in the query's order, in a tool's text
// outrank the same words apart, and explain names the pair. The two tools
// have the same words, so without the pair they tie (the first row wins).
func TestPairs(t *testing.T) {
	docs := []Doc{
		{Name: "get_wind", Description: "Current wind, weather."},
		{Name: "get_sky", Description: "Wind, current weather."},
	}
	ix := fromDocs(docs, DefaultConfig)
	tests := []struct {
		query string
		want  int // first row
		pair  string
	}{
		{"current weather", 1, "current weather"},
		{"weather current", 0, ""}, // no tool has this pair: a tie
	}
	for _, tt := range tests {
		q := ix.Prepare(tt.query, nil)
		got, _ := q.Search(t.Context(), 2, nil)
		if len(got) != 2 || got[0].Row != tt.want {
			t.Errorf("Search(%q) = %v, want row %d first", tt.query, got, tt.want)
		}
		if m := q.Matched(1); tt.pair != "" && (len(m[tt.pair]) != 1 || m[tt.pair][0] != "pairs") {
			t.Errorf("Matched(%q) = %v, want %q in pairs", tt.query, m, tt.pair)
		}
	}
}

// A derived form of a query word counts even when another tool uses the
// query's own word, but less than that word does, and explain names it.
func TestDerivedOfKnownWord(t *testing.T) {
	docs := []Doc{
		{Name: "multiplication_table", Description: "Looks a product up."},
		{Name: "multiply", Description: "Multiplies two integers."},
		{Name: "add", Description: "Adds two integers."},
	}
	ix := fromDocs(docs, DefaultConfig)
	q := ix.Prepare("multiplication of integers", nil)
	got, _ := q.Search(t.Context(), 3, nil)
	if len(got) != 3 || got[0].Row != 0 || got[1].Row != 1 {
		t.Fatalf("Search = %v, want rows 0, 1, 2", got)
	}
	if m := q.Matched(1); len(m["derived:multipli"]) == 0 {
		t.Errorf("Matched(1) = %v, want derived:multipli", m)
	}
	if m := q.Matched(0); len(m["derived:multipli"]) != 0 {
		t.Errorf("Matched(0) = %v: the query's own word must not be re-labelled", m)
	}
}

// A number in a query is a value: a tool that numbers its variants must
// not outrank the tool the query's words describe because of it.
func TestNumberIsWeakEvidence(t *testing.T) {
	docs := []Doc{
		{Name: "Rentals_2_Search", Description: "Search for a flat."},
		{Name: "count_things", Description: "Counts the bedrooms of a flat."},
	}
	ix := fromDocs(docs, DefaultConfig)
	got, _ := ix.Prepare("bedrooms in flat 2", nil).Search(t.Context(), 2, nil)
	if len(got) != 2 || got[0].Row != 1 {
		t.Errorf("Search = %v, want row 1 (the words) before row 0 (the number)", got)
	}
}

// TestPrepareTermsInto: a query prepared in the memory of another, longer
// one scores and explains exactly as one prepared afresh.
func TestPrepareTermsInto(t *testing.T) {
	ix, cat := testIndex(t)
	queries := []string{
		"open a pull request and then post the release notes to the team channel, as well as jira",
		"fft", "slow queries", "zzzqqq", "deploy the service",
	}
	var reused Query
	for _, text := range queries {
		terms := analysis.English.Terms(text)
		fresh := ix.PrepareTerms(terms)
		reused = ix.PrepareTermsInto(reused, terms)
		want, got := make([]float32, cat.Len()), make([]float32, cat.Len())
		fresh.ScoresInto(want)
		reused.ScoresInto(got)
		if !slices.Equal(want, got) || !slices.Equal(fresh.terms, reused.terms) {
			t.Fatalf("%q: prepared in reused memory, terms %v; afresh %v", text, reused.terms, fresh.terms)
		}
	}
}

// TestImpactCodes checks that a posting's coded impact is exactly the one
// an index built on one core finds, however the build was split over
// cores (each numbering its own impacts first) and in either width of
// code.
func TestImpactCodes(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	words := strings.Fields("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa")
	text := func(n int) string {
		ws := make([]string, n)
		for i := range ws {
			ws[i] = words[r.IntN(len(words))]
		}
		return strings.Join(ws, " ")
	}
	docs := make([]Doc, 3000)
	for i := range docs {
		// Lengths vary, so that impacts do.
		docs[i] = Doc{Name: text(1 + r.IntN(3)), Description: text(1 + r.IntN(40)), Params: text(r.IntN(12))}
	}
	build := func(procs, limit int) *Index {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		defer func(was int) { maxCode16 = was }(maxCode16)
		maxCode16 = limit
		return fromDocs(docs, DefaultConfig)
	}
	want := build(1, 1<<16)
	if want.code16 == nil || len(want.impacts) < 100 {
		t.Fatalf("reference: %d distinct impacts, two-byte codes %v; want many, in two bytes", len(want.impacts), want.code16 != nil)
	}
	tests := []struct {
		name       string
		procs      int
		limit      int
		wantWidth2 bool
	}{
		{name: "seven cores", procs: 7, limit: 1 << 16, wantWidth2: true},
		{name: "seven cores, four-byte codes", procs: 7, limit: len(want.impacts) - 1},
		{name: "one core, four-byte codes", procs: 1, limit: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := build(tt.procs, tt.limit)
			if (got.code16 != nil) != tt.wantWidth2 || (got.code32 != nil) == tt.wantWidth2 {
				t.Fatalf("two-byte codes %v, four-byte %v; want two-byte %v", got.code16 != nil, got.code32 != nil, tt.wantWidth2)
			}
			if !slices.Equal(got.post, want.post) || !slices.Equal(got.impacts, want.impacts) {
				t.Fatal("postings or impact table differ from one core's")
			}
			for i := range want.post {
				if g, w := got.impact(uint32(i)), want.impact(uint32(i)); g != w {
					t.Fatalf("posting %d (document %d): impact %v, want %v", i, want.post[i]>>numFields, g, w)
				}
			}
		})
	}
}
