package bm25

import (
	"fmt"
	"maps"
	"math"
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

// TestImpactCodes checks that a posting's coded impact and fields are
// exactly those an index built on one core finds, however the build was
// split over cores (each numbering its own codes first), with the codes
// held below the documents or apart; and that queries score, rate and
// explain alike either way.
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
	queries := []string{text(1), text(3), text(6) + " zulu", "alpha bravo"}
	build := func(procs, packed, code16 int) *Index {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		defer func(p, c int) { maxPacked, maxCode16 = p, c }(maxPacked, maxCode16)
		maxPacked, maxCode16 = packed, code16
		return fromDocs(docs, DefaultConfig)
	}
	want := build(1, math.MaxInt, 1<<16)
	if want.shift == 0 || len(want.impacts) < 100 {
		t.Fatalf("reference: %d distinct codes, shift %d; want many, below the documents", len(want.impacts), want.shift)
	}
	n := len(want.impacts)
	tests := []struct {
		name           string
		procs          int
		packed, code16 int
		width          int // bytes a posting's code takes apart from its document
	}{
		{name: "seven cores", procs: 7, packed: math.MaxInt, code16: 1 << 16},
		{name: "one core, as many codes as allowed", procs: 1, packed: n, code16: 0},
		{name: "seven cores, two-byte codes", procs: 7, packed: n - 1, code16: n, width: 2},
		{name: "one core, two-byte codes", procs: 1, packed: 0, code16: 1 << 16, width: 2},
		{name: "seven cores, four-byte codes", procs: 7, packed: 0, code16: n - 1, width: 4},
		{name: "one core, four-byte codes", procs: 1, packed: 0, code16: 0, width: 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := build(tt.procs, tt.packed, tt.code16)
			width := 2*min(len(got.code16), 1) + 4*min(len(got.code32), 1)
			if width != tt.width || (got.shift == 0) != (width != 0) {
				t.Fatalf("codes %d bytes apart, shift %d; want %d bytes apart", width, got.shift, tt.width)
			}
			if !slices.Equal(got.impacts, want.impacts) || !slices.Equal(got.fields, want.fields) || !slices.Equal(got.start, want.start) {
				t.Fatal("code tables or lists differ from one core's")
			}
			for i := range want.post {
				gd, wd := got.post[i]>>got.shift, want.post[i]>>want.shift
				if gc, wc := got.code(uint32(i)), want.code(uint32(i)); gd != wd || gc != wc {
					t.Fatalf("posting %d: document %d, code %d; want %d, %d", i, gd, gc, wd, wc)
				}
			}
			sameAnswers(t, got, want, queries, 50)
		})
	}
}

// TestPackedSizes: at every document count, around the powers of two
// where a document number takes another bit and the room below it
// halves, and with none at all, postings that hold their codes score,
// rate and explain every document as postings that hold them apart do.
func TestPackedSizes(t *testing.T) {
	words := strings.Fields("alpha bravo charlie delta echo foxtrot golf hotel")
	for _, n := range []int{0, 1, 2, 3, 255, 256, 257, 4095, 4096, 4097} {
		docs := make([]Doc, n)
		for i := range docs {
			// Names and descriptions of varied length, so that impacts do.
			docs[i] = Doc{Name: words[i%len(words)], Description: strings.Repeat(words[(i/8)%len(words)]+" ", 1+i%5) + words[i%3]}
		}
		build := func(packed int) *Index {
			defer func(was int) { maxPacked = was }(maxPacked)
			maxPacked = packed
			return fromDocs(docs, DefaultConfig)
		}
		packed, apart := build(math.MaxInt), build(0)
		if n > 0 && (packed.shift == 0 || apart.shift != 0) {
			t.Fatalf("n=%d: shifts %d and %d; want the first only", n, packed.shift, apart.shift)
		}
		t.Run(fmt.Sprintf("n=%d", n), func(t *testing.T) {
			sameAnswers(t, packed, apart, []string{"alpha", "bravo charlie", "golf hotel echo", "zulu"}, n)
		})
	}
}

// sameAnswers checks that got scores every document for each query as
// want does, and rates and explains the first rows documents alike.
func sameAnswers(t *testing.T, got, want *Index, queries []string, rows int) {
	t.Helper()
	for _, text := range queries {
		gq, wq := got.Prepare(text, nil), want.Prepare(text, nil)
		gs, ws := make([]float32, got.Len()), make([]float32, want.Len())
		gq.ScoresInto(gs)
		wq.ScoresInto(ws)
		if !slices.Equal(gs, ws) {
			t.Fatalf("%q: scores differ", text)
		}
		for row := range rows {
			if g, w := gq.Fraction(row), wq.Fraction(row); g != w {
				t.Fatalf("%q: row %d: fraction %v, want %v", text, row, g, w)
			}
			if g, w := gq.Matched(row), wq.Matched(row); !maps.EqualFunc(g, w, slices.Equal) {
				t.Fatalf("%q: row %d: matched %v, want %v", text, row, g, w)
			}
		}
	}
}

// TestWith: words added With a weight score at it, a term the query has
// already keeps its own weight, and a document lacking an added word is
// rated as if it were not asked.
func TestWith(t *testing.T) {
	ix, cat := testIndex(t)
	row := func(id string) int {
		r, err := cat.Resolve(id)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	ask := ix.Prepare("compute fft", nil)
	earlier := ix.Prepare("database backup fft", nil)
	for _, weight := range []float64{0, 0.3, 1} {
		q := ix.Prepare("compute fft", nil).With(earlier, weight)
		fft, backup := row("compute/compute_fft"), row("postgres/create_backup")
		got, want := make([]float32, cat.Len()), make([]float32, cat.Len())
		q.ScoresInto(got)
		ask.ScoresInto(want)
		if got[fft] < want[fft] {
			t.Errorf("weight %v: the ask's tool scores %v, less than the ask alone gives it (%v)", weight, got[fft], want[fft])
		}
		only := make([]float32, cat.Len())
		ix.Prepare("database backup", nil).ScoresInto(only)
		if d := got[backup] - want[backup] - float32(weight)*only[backup]; d > 1e-5 || d < -1e-5 {
			t.Errorf("weight %v: the earlier words' tool gains %v from them, want %v of their own score %v", weight, got[backup]-want[backup], weight, only[backup])
		}
		switch f, g := q.Fraction(fft), ask.Fraction(fft); {
		case weight < 1 && f != g:
			t.Errorf("weight %v: the ask's tool, lacking the earlier words, rates %v; the ask alone %v", weight, f, g)
		case weight == 1 && f >= g:
			// At full weight the earlier words are asked: lacking them
			// costs the tool.
			t.Errorf("weight 1: the ask's tool, lacking the earlier words, rates %v, no less than the ask alone gives it (%v)", f, g)
		}
	}
	matched := ix.Prepare("compute fft", nil).With(earlier, 0.3).Matched(row("postgres/create_backup"))
	if _, ok := matched["earlier:backup"]; !ok {
		t.Errorf("an earlier word matched reads %v, want it after \"earlier:\"", matched)
	}
	if n := len(ix.Prepare("compute fft", nil).With(ix.Prepare("compute fft", nil), 0.3).terms); n != len(ask.terms) {
		t.Errorf("the ask's own words added again: %d terms, want %d", n, len(ask.terms))
	}
}
