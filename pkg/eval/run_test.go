package eval

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/toolsearch/toolsearch/pkg/catalog"
	"github.com/toolsearch/toolsearch/pkg/search"
)

// fixed answers every query with a ranking chosen in advance.
type fixed map[string][]string

func (f fixed) Search(_ context.Context, req search.Request) (Answer, error) {
	var a Answer
	for _, n := range f[req.Query] {
		a.Tools = append(a.Tools, ToolKey{Server: "s", Name: n})
	}
	if req.TopK != nil && len(a.Tools) > *req.TopK {
		a.Tools = a.Tools[:*req.TopK]
	}
	return a, nil
}

func testCatalog(t *testing.T) *catalog.Catalog {
	t.Helper()
	part, err := catalog.Parse("t.json", []byte(`{"servers":[{"name":"s","tools":[
		{"name":"a","description":"Tool a."},{"name":"b","description":"Tool b."},{"name":"c","description":"Tool c."},
		{"name":"d","description":"Tool d."},{"name":"e","description":"Tool e."},{"name":"f","description":"Tool f."}]}]}`), "")
	if err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.New([]catalog.Part{part})
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

func TestRunMetrics(t *testing.T) {
	cat := testCatalog(t)
	s := fixed{
		"first":  {"a", "b", "c"},           // expected at 1
		"second": {"b", "a", "c"},           // expected at 2
		"two":    {"c", "a", "d", "b"},      // a at 2, b at 4: only a within k=3
		"deep":   {"b", "c", "d", "e", "a"}, // a at 5: a miss at k=3, found deeper
		"none":   {"b", "c"},                // never
	}
	cases := []Case{
		{ID: "1", Category: "x", Query: "first", Expected: []string{"a"}},
		{ID: "2", Category: "x", Query: "second", Expected: []string{"a"}},
		{ID: "3", Category: "y", Query: "two", Expected: []string{"a", "b"}},
		{ID: "4", Category: "y", Query: "deep", Expected: []string{"a"}},
		{ID: "5", Category: "y", Query: "none", Expected: []string{"s/a"}},
	}
	rep, err := Run(t.Context(), cat, cases, s, Options{K: 3})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		got, want float64
	}{
		{"cases", float64(rep.Summary.Cases), 5},
		{"expected", float64(rep.Summary.Expected), 6},
		{"found", float64(rep.Summary.Found), 3}, // 1, 2, and a of case 3
		{"recall", rep.Summary.Recall, 3.0 / 6},
		{"recall@1", rep.Summary.RecallAt1, 1.0 / 6},
		{"recall mean", rep.Summary.RecallMean, (1 + 1 + 0.5 + 0 + 0) / 5},
		{"hit@1", rep.Summary.HitAt1, 1.0 / 5},
		{"mrr", rep.Summary.MRR, (1 + 0.5 + 0.5 + 0 + 0) / 5},
		{"category x recall", rep.Categories[0].Recall, 1},
		{"category y recall", rep.Categories[1].Recall, 1.0 / 4},
		{"case 3 first rank", float64(rep.Cases[2].FirstRank), 2},
		{"case 3 ndcg", rep.Cases[2].NDCG, (1 / math.Log2(3)) / (1 + 1/math.Log2(3))},
		{"misses", float64(len(rep.Misses)), 3},
		{"deep miss rank", float64(missRank(rep, "4")), 5},
		{"missing miss rank", float64(missRank(rep, "5")), 0},
	}
	for _, tt := range tests {
		if math.Abs(tt.got-tt.want) > 1e-9 {
			t.Errorf("%s = %v, want %v", tt.name, tt.got, tt.want)
		}
	}

	// The same run, one case worse: the comparison names exactly it.
	s["first"] = []string{"b", "c", "a"}
	now, err := Run(t.Context(), cat, cases, s, Options{K: 3})
	if err != nil {
		t.Fatal(err)
	}
	regs := Compare(rep, now)
	if len(regs) != 1 || regs[0].Case != "1" || regs[0].Was != 1 || regs[0].Now != 3 {
		t.Errorf("Compare = %+v, want case 1 from rank 1 to 3", regs)
	}
	if regs := Compare(rep, rep); len(regs) != 0 {
		t.Errorf("Compare(same) = %+v, want none", regs)
	}
	// A baseline Compare could not hold the run to is refused.
	for _, tt := range []struct {
		name  string
		cases []Case
		k     int
		want  string // in the error; "" for none
	}{
		{"the same cases and k", cases, 3, ""},
		{"one case in common", append([]Case{{ID: "new"}}, cases[0]), 3, ""},
		{"another k", cases, 5, "written with -k 3, this run has -k 5"},
		{"no case in common", []Case{{ID: "other"}}, 3, "shares no case id with these 1 cases"},
	} {
		err := CheckBaseline(rep, tt.cases, tt.k)
		if (tt.want == "") != (err == nil) || err != nil && (!strings.Contains(err.Error(), tt.want) || !errors.Is(err, ErrBadInput)) {
			t.Errorf("%s: CheckBaseline = %v, want %q", tt.name, err, tt.want)
		}
	}
}

func missRank(rep *Report, id string) int {
	for _, m := range rep.Misses {
		if m.Case == id {
			return m.Rank
		}
	}
	return -1
}

func TestRunRejectsUnknownLabels(t *testing.T) {
	_, err := Run(t.Context(), testCatalog(t), []Case{{ID: "1", Query: "q", Expected: []string{"nope"}}}, fixed{}, Options{K: 3})
	if err == nil {
		t.Fatal("Run with an unknown expected tool: no error")
	}
}
