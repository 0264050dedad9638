package rank

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/toolsearch/toolsearch/pkg/analysis"
	"github.com/toolsearch/toolsearch/pkg/bm25"
	"github.com/toolsearch/toolsearch/pkg/index"
)

func TestSentences(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"find a hotel in Rome. Also book a table for two", []string{"find a hotel in Rome", "Also book a table for two"}},
		{"one two", nil}, // under three words: no sentence
		{"e.g. use example.com to test 3.5 things", []string{"use example.com to test 3.5 things"}}, // "e.g" alone is under three words
		{"list my open issues? then close the stale ones!", []string{"list my open issues", "then close the stale ones"}},
		{"a b c; d e", []string{"a b c"}},
	}
	for _, tt := range tests {
		if got := sentences(tt.in, nil); !slices.Equal(got, tt.want) {
			t.Errorf("sentences(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// hasWords is the allocation-free form of len(strings.Fields(s)) >= n,
// which is its reference.
func FuzzHasWords(f *testing.F) {
	for _, s := range []string{"", " ", "a", "a b", " two  spaces\tand tab ", "caf\u00e9\u00a0menu", "x\u2003y z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for n := range 5 {
			if got, want := hasWords(s, n), len(strings.Fields(s)) >= n; got != want {
				t.Fatalf("hasWords(%q, %d) = %v, want %v", s, n, got, want)
			}
		}
	})
}

func TestIntents(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"find a hotel in Rome. Also book a table for two", []string{"find a hotel in Rome", "Also book a table for two"}},
		{"detect the language of this text, then get the gene expression pattern of BRCA1",
			[]string{"detect the language of this text", "get the gene expression pattern of BRCA1"}},
		{"get the political history of France, the subscriber info for id 9, and details about case 5678",
			[]string{"get the political history of France, the subscriber info for id 9", "details about case 5678"}},
		{"add a meeting at 2pm and then remind me ten minutes before", []string{"add a meeting at 2pm", "remind me ten minutes before"}},
		{"salt and pepper shaker", []string{"salt and pepper shaker"}}, // a bare "and" joins words, not requests
		{"one two", nil},
	}
	for _, tt := range tests {
		if got := intents(tt.in, nil); !slices.Equal(got, tt.want) {
			t.Errorf("intents(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestReserve(t *testing.T) {
	// Rows 0-5 are one dominant server's tools, fused above everything;
	// rows 6 and 7 are the best matches of two intents.
	cands := []int32{100, 101, 102, 103, 104, 105, 106, 107}
	scores := []float32{0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.2, 0.1}
	rows := func(ms []index.Match) []int {
		var out []int
		for _, m := range ms {
			out = append(out, int(cands[m.Row]))
		}
		return out
	}
	tests := []struct {
		name       string
		k          int
		intentBest []int
		want       []int
	}{
		{"one intent: plain top k", 4, []int{106}, []int{100, 101, 102, 103}},
		{"intents' best take the last places, in score order", 4, []int{106, 107}, []int{100, 101, 106, 107}},
		{"an intent already in the top k takes nothing", 4, []int{101, 107}, []int{100, 101, 102, 107}},
		{"no more than intentShare of k", 2, []int{106, 107, -1}, []int{100, 106}},
		{"an intent without a match (-1) takes nothing", 4, []int{-1, 107}, []int{100, 101, 102, 107}},
		{"fewer candidates than k: all of them", 10, []int{106, 107}, []int{100, 101, 102, 103, 104, 105, 106, 107}},
	}
	for _, tt := range tests {
		got := rows(reserve(cands, slices.Clone(scores), tt.k, &scratch{intentBest: tt.intentBest}))
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: reserve = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestSiblingsJoin: the tools of the servers behind the best candidates
// join the candidates, found by their server's row list (here not one
// run of rows), unless the caller's filter drops them; with the boost
// off, only tools with evidence are candidates.
func TestSiblingsJoin(t *testing.T) {
	texts := []string{"deploy the service", "send an email message", "roll back a release", "read a file", "list the pods"}
	serverOf := []int32{0, 1, 0, 2, 0}
	c := analysis.English.Corpus(len(texts), analysis.Segments{N: int(bm25.Concepts)}, func(i int, seg []string) { seg[bm25.Description] = texts[i] })
	lexical := bm25.New(c, bm25.Layout{Text: [bm25.Concepts]int{0, 1, 2, 3, 4, 5}, Learned: -1}, bm25.DefaultConfig)
	tests := []struct {
		name  string
		boost float64
		keep  func(int) bool
		want  []int
	}{
		{"every tool of the best server", 0, nil, []int{0, 2, 4}},
		{"but those the filter drops", 0, func(row int) bool { return row != 4 }, []int{0, 2}},
		{"boost off: evidence only", -1, nil, []int{0}},
	}
	for _, tt := range tests {
		rk := New(Config{SiblingBoost: tt.boost}, nil, lexical, serverOf, 3, nil)
		q := Query{Text: "deploy", Lexical: lexical.Prepare("deploy", nil)}
		res, err := rk.Hybrid(t.Context(), q, 10, tt.keep)
		if err != nil {
			t.Fatal(err)
		}
		var got []int
		for _, r := range res {
			got = append(got, r.Row)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: rows %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestAppendReusesMemory: each ranker's results appended into memory a
// previous answer left (every field set) are those of a fresh answer, and
// what dst held before is kept.
func TestAppendReusesMemory(t *testing.T) {
	texts := []string{"deploy the service", "send an email message", "roll back a release", "read a file", "list the pods"}
	c := analysis.English.Corpus(len(texts), analysis.Segments{N: int(bm25.Concepts)}, func(i int, seg []string) { seg[bm25.Description] = texts[i] })
	lexical := bm25.New(c, bm25.Layout{Text: [bm25.Concepts]int{0, 1, 2, 3, 4, 5}, Learned: -1}, bm25.DefaultConfig)
	dense, err := index.Adopt([]float32{1, 0, 0, 0, 1, 0, 1, 1, 0, 0, 0, 1, 1, 0, 1}, 5, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	rk := New(Config{}, dense, lexical, []int32{0, 1, 0, 2, 0}, 3, nil)
	q := Query{Text: "deploy a release", Lexical: lexical.Prepare("deploy a release", nil), Dense: &index.Query{Dense: []float32{1, 0.5, 0}}}
	type ranker func(context.Context, []Result, Query, int, func(int) bool) ([]Result, error)
	for _, tt := range []struct {
		name          string
		fresh, append ranker
	}{
		{"hybrid", func(ctx context.Context, _ []Result, q Query, k int, keep func(int) bool) ([]Result, error) {
			return rk.Hybrid(ctx, q, k, keep)
		}, rk.AppendHybrid},
		{"semantic", func(ctx context.Context, _ []Result, q Query, k int, keep func(int) bool) ([]Result, error) {
			return rk.Semantic(ctx, q, k, keep)
		}, rk.AppendSemantic},
		{"keyword", func(ctx context.Context, _ []Result, q Query, k int, keep func(int) bool) ([]Result, error) {
			return rk.Keyword(ctx, q, k, keep)
		}, rk.AppendKeyword},
	} {
		want, err := tt.fresh(t.Context(), nil, q, 10, nil)
		if err != nil || len(want) == 0 {
			t.Fatalf("%s: %v, %v", tt.name, want, err)
		}
		dirty := Result{Row: -1, Dense: 9, Lex: 9, DenseRank: 9, LexRank: 9, Fused: 9, Companion: 9}
		buf := slices.Repeat([]Result{dirty}, 8)
		got, err := tt.append(t.Context(), buf[:1], q, 10, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got[0] != dirty || !slices.Equal(got[1:], want) {
			t.Errorf("%s into used memory = %+v, want %+v after the first", tt.name, got, want)
		}
	}
}

// TestLexRanksOf: the answer's lexical ranks, worked out for its rows
// alone, are those of sorting every candidate, ties and rows without a
// lexical score included.
func TestLexRanksOf(t *testing.T) {
	tests := []struct {
		name string
		lex  []float32
		rows []int32
	}{
		{"distinct scores", []float32{0.1, 0.9, 0.5, 0.7, 0.3}, []int32{1, 3, 2}},
		{"ties break by row", []float32{0.5, 0.5, 0.9, 0.5, 0.5}, []int32{4, 1, 2}},
		{"an answer row without a lexical score", []float32{0, 0.4, 0.2, 0, 0.8}, []int32{4, 0, 2}},
		{"the lowest candidate", []float32{0.3, 0.2, 0.1}, []int32{2}},
		{"no lexical scores", []float32{0, 0, 0}, []int32{0, 1}},
		{"every candidate", []float32{0.2, 0.2, 0.6, 0.1, 0.6, 0.3}, []int32{0, 1, 2, 3, 4, 5}},
	}
	for _, tt := range tests {
		n := len(tt.lex)
		cands := make([]int32, n)
		for i := range cands {
			cands[i] = int32(i)
		}
		want := newScratch(n, 1)
		want.lex = tt.lex
		want.lexRanks(cands)
		got := newScratch(n, 1)
		got.lex = tt.lex
		for i := range got.lexRank {
			got.lexRank[i] = 99 // left from an earlier query
		}
		got.lexRanksOf(cands, tt.rows)
		for _, row := range tt.rows {
			if got.lexRank[row] != want.lexRank[row] {
				t.Errorf("%s: row %d has lexical rank %d, want %d", tt.name, row, got.lexRank[row], want.lexRank[row])
			}
		}
	}
}

// TestIntentBound: a text of many requests ranks only its last
// MaxIntents apart, each a keyword ranking of every tool.
func TestIntentBound(t *testing.T) {
	texts := []string{"deploy the service", "send an email message", "roll back a release", "read a file", "list the pods"}
	c := analysis.English.Corpus(len(texts), analysis.Segments{N: int(bm25.Concepts)}, func(i int, seg []string) { seg[bm25.Description] = texts[i] })
	lexical := bm25.New(c, bm25.Layout{Text: [bm25.Concepts]int{0, 1, 2, 3, 4, 5}, Learned: -1}, bm25.DefaultConfig)
	rk := New(Config{}, nil, lexical, []int32{0, 1, 0, 2, 0}, 3, nil)
	for _, tt := range []struct {
		name    string
		text    string
		intents int
	}{
		{"one", "deploy the service and read a file", 0},
		{"a few", "deploy the service. read a file. list the pods.", 3},
		{"many: the last ones", strings.Repeat("roll back a release. ", 3*MaxIntents) + "send an email message.", MaxIntents},
	} {
		sc := newScratch(len(texts), 3)
		rk.lexicalScores(Query{Text: tt.text, Lexical: lexical.Prepare(tt.text, nil)}, sc, nil)
		if len(sc.intentBest) != tt.intents {
			t.Errorf("%s: %d intents ranked, want %d", tt.name, len(sc.intentBest), tt.intents)
		}
		// What a search is charged for (Intents) is what is ranked.
		if n := rk.Intents(tt.text); n != len(sc.intentBest) {
			t.Errorf("%s: Intents = %d, %d ranked", tt.name, n, len(sc.intentBest))
		}
		if tt.intents < MaxIntents {
			continue
		}
		if last := sc.intentBest[len(sc.intentBest)-1]; last != 1 {
			t.Errorf("%s: the last intent's best row is %d, want 1 (the email tool)", tt.name, last)
		}
	}
}

// TestBinaryHybrid: over a binary index, a hybrid ranking whose lexical
// candidates are few takes its dense candidates from the codes and gives
// the rest their exact cosines as they join; one whose candidates would
// cost more that way than every row (a word every tool has) scores every
// row exactly, and answers as the exact index does.
func TestBinaryHybrid(t *testing.T) {
	const n, dim = 3000, 256
	r := rand.New(rand.NewPCG(1, 2))
	vecs := make([][]float32, n)
	texts := make([]string, n)
	for i := range vecs {
		vecs[i] = make([]float32, dim)
		for j := range vecs[i] {
			vecs[i][j] = float32(r.NormFloat64())
		}
		texts[i] = fmt.Sprintf("common tool group%d", i%300)
	}
	exact, err := index.Adopt(slices.Concat(vecs...), len(vecs), len(vecs[0]), nil)
	if err != nil {
		t.Fatal(err)
	}
	c := analysis.English.Corpus(n, analysis.Segments{N: int(bm25.Concepts)}, func(i int, seg []string) { seg[bm25.Description] = texts[i] })
	lexical := bm25.New(c, bm25.Layout{Text: [bm25.Concepts]int{0, 1, 2, 3, 4, 5}, Learned: -1}, bm25.DefaultConfig)
	serverOf := make([]int32, n)
	exactRk := New(Config{}, exact, lexical, serverOf, 1, nil)
	binaryRk := New(Config{}, exact.WithBinary(100), lexical, serverOf, 1, nil)
	dense := &index.Query{Dense: vecs[7]}
	all := make([]float32, n)
	if err := exact.Scores(*dense, all); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		text string
		scan bool
	}{
		{"group7", false}, // 10 tools
		{"common", true},  // every tool
	} {
		q := Query{Text: tt.text, Lexical: lexical.Prepare(tt.text, nil), Dense: dense}
		sc := binaryRk.scratch.Get().(*scratch)
		sc.reset()
		if got := binaryRk.scanJoins(*dense, binaryRk.lexicalScores(q, sc, nil), nil); got != tt.scan {
			t.Errorf("%q: scanJoins = %v, want %v", tt.text, got, tt.scan)
		}
		binaryRk.scratch.Put(sc)
		got, err := binaryRk.Hybrid(t.Context(), q, 10, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, res := range got {
			if res.Dense != all[res.Row] {
				t.Errorf("%q: row %d's cosine %v, exactly %v", tt.text, res.Row, res.Dense, all[res.Row])
			}
		}
		if !tt.scan {
			continue
		}
		want, err := exactRk.Hybrid(t.Context(), q, 10, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%q: binary %+v, exact %+v", tt.text, got, want)
		}
	}
}
