// Command nomatch calibrates and measures the no_match flag: it should be
// raised when the tool a query needs is absent from the catalog, and not
// when it is present. For each sampled single-tool case of a set, the query
// runs twice in every mode: against the whole catalog, and against the
// catalog without its expected tool, built afresh so that nothing of the
// removed tool remains in BM25 statistics or the embedder's weights.
//
// The threshold per mode is chosen leave-one-set-out: for each set, the
// threshold that flags the most absences (mean recall) while a raised flag
// stays right at least minPrecision of the time (mean precision), over the
// other sets; then it is measured on the held-out set. The last table
// measures the thresholds the service ships (search.DefaultNoMatch) on
// every set, with the costly error counted apart: the flag raised while the
// right tool was ranked first.
//
// With -conversation, each query is asked as the newest turn of a
// conversation whose earlier turns are another sampled case's: its query,
// and an assistant's turn describing that case's tool (what a router sends
// after one task, asking the next). The flag should then tell absent from
// present as well as for the query alone, though the earlier turns' words
// are ranked with it.
//
// Usage: go run ./evals/nomatch [-n 150] [-conversation] DIR...   (DIR holds catalog.json and cases.jsonl)
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"

	"github.com/toolsearch/toolsearch/pkg/access"
	"github.com/toolsearch/toolsearch/pkg/catalog"
	"github.com/toolsearch/toolsearch/pkg/embedding"
	"github.com/toolsearch/toolsearch/pkg/eval"
	"github.com/toolsearch/toolsearch/pkg/search"
)

var modes = []search.Mode{search.ModeHybrid, search.ModeSemantic, search.ModeKeyword}

// minPrecision is the share of raised flags that must be right on the sets
// a threshold is chosen on: told "nothing fits", a model should be told the
// truth at least seven times in ten.
const minPrecision = 0.7

// scores holds one set's top confidences per mode, with the expected tool
// present and absent, case by case, and whether the present tool ranked
// first.
type scores struct {
	name            string
	present, absent map[search.Mode][]float64
	first           map[search.Mode][]bool
}

func main() {
	n := flag.Int("n", 150, "single-tool cases sampled per set")
	conv := flag.Bool("conversation", false, "ask each query after another case's turns")
	flag.Parse()
	if err := run(os.Stdout, flag.Args(), *n, *conv); err != nil {
		fmt.Fprintln(os.Stderr, "nomatch:", err)
		os.Exit(1)
	}
}

func run(w io.Writer, dirs []string, n int, conv bool) error {
	var sets []scores
	for _, dir := range dirs {
		s, err := collect(dir, n, conv)
		if err != nil {
			return err
		}
		sets = append(sets, s)
	}
	for _, m := range modes {
		fmt.Fprintf(w, "\n%s, leave-one-set-out (threshold chosen on the other sets):\n\n", m)
		fmt.Fprintln(w, "| held out | threshold | flagged, present | flagged, absent | precision | recall |")
		fmt.Fprintln(w, "|---|---|---|---|---|---|")
		for i, s := range sets {
			rest := slices.Concat(sets[:i], sets[i+1:])
			t := choose(rest, m)
			fmt.Fprintln(w, row(s, m, t, fmt.Sprintf("%.3f", t)))
		}
		fmt.Fprintf(w, "\n%s, chosen on all sets: %.3f; shipped: %.3f\n\n", m, choose(sets, m), search.DefaultNoMatch[m])
		fmt.Fprintln(w, "| set | cases | flagged, present | flagged, absent | precision | recall | flagged, right tool first | right tool first |")
		fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
		for _, s := range sets {
			t := search.DefaultNoMatch[m]
			wrong, first := 0, 0
			for i, c := range s.present[m] {
				if s.first[m][i] {
					first++
					if c < t {
						wrong++
					}
				}
			}
			fmt.Fprintf(w, "%s %d | %d |\n", row(s, m, t, fmt.Sprint(len(s.absent[m]))), wrong, first)
		}
	}
	return nil
}

// choose returns the threshold with the best mean recall over sets whose
// mean precision reaches minPrecision, each set counting once whatever its
// size. Candidates are the observed confidences.
func choose(sets []scores, m search.Mode) float64 {
	var cands []float64
	for _, s := range sets {
		cands = append(cands, s.present[m]...)
		cands = append(cands, s.absent[m]...)
	}
	slices.Sort(cands)
	best, bestT := -1.0, 0.0
	for _, c := range slices.Compact(cands) {
		t := c + 1e-6 // flag strictly below t, so c itself is flagged
		var prec, rec float64
		for _, s := range sets {
			p, r := measure(s, m, t)
			prec, rec = prec+p, rec+r
		}
		if prec/float64(len(sets)) >= minPrecision && rec > best {
			best, bestT = rec, t
		}
	}
	return bestT
}

func measure(s scores, m search.Mode, t float64) (precision, recall float64) {
	fp, tp := below(s.present[m], t), below(s.absent[m], t)
	if tp+fp == 0 {
		return 0, 0
	}
	return float64(tp) / float64(tp+fp), float64(tp) / float64(len(s.absent[m]))
}

func row(s scores, m search.Mode, t float64, label string) string {
	p, r := measure(s, m, t)
	return fmt.Sprintf("| %s | %s | %d | %d | %.2f | %.2f |", s.name, label, below(s.present[m], t), below(s.absent[m], t), p, r)
}

func below(xs []float64, t float64) int {
	n := 0
	for _, x := range xs {
		if x < t {
			n++
		}
	}
	return n
}

func collect(dir string, n int, conv bool) (scores, error) {
	s := scores{name: filepath.Base(dir), present: map[search.Mode][]float64{}, absent: map[search.Mode][]float64{}, first: map[search.Mode][]bool{}}
	parts, err := catalog.ReadParts([]string{filepath.Join(dir, "catalog.json")}, "")
	if err != nil {
		return s, err
	}
	cat, err := catalog.New(parts)
	if err != nil {
		return s, err
	}
	all, err := eval.LoadCases(filepath.Join(dir, "cases.jsonl"))
	if err != nil {
		return s, err
	}
	var cases []eval.Case
	for _, c := range all {
		if len(c.Expected) == 1 {
			cases = append(cases, c)
		}
	}
	r := rand.New(rand.NewPCG(1, 2)) // the same sample every run
	r.Shuffle(len(cases), func(i, j int) { cases[i], cases[j] = cases[j], cases[i] })
	cases = cases[:min(n, len(cases))]
	whole, err := service(cat)
	if err != nil {
		return s, err
	}
	for i, c := range cases {
		req := search.Request{Query: c.Query, IncludeCore: new(bool)}
		if conv {
			req = conversation(cat, c, cases[(i+1)%len(cases)])
		}
		row, err := cat.Resolve(c.Expected[0])
		if err != nil {
			continue
		}
		rows := make([]int, 0, cat.Len()-1)
		for i := range cat.Len() {
			if i != row {
				rows = append(rows, i)
			}
		}
		without, err := service(cat.Subset(rows))
		if err != nil {
			return s, err
		}
		want := cat.Tool(row)
		for _, m := range modes {
			p, top, err1 := confidence(whole, req, m)
			a, _, err2 := confidence(without, req, m)
			if err1 != nil || err2 != nil {
				continue
			}
			s.present[m] = append(s.present[m], p)
			s.absent[m] = append(s.absent[m], a)
			s.first[m] = append(s.first[m], top == want.Server+"/"+want.Name)
		}
	}
	return s, nil
}

func service(cat *catalog.Catalog) (*search.Service, error) {
	svc := search.New(search.Config{Embedder: embedding.NewLocal(0)})
	_, err := svc.Build(context.Background(), &search.Setup{Catalog: cat})
	return svc, err
}

// conversation asks c's query after prev's: prev's query, then an
// assistant's turn describing prev's tool as having been used.
func conversation(cat *catalog.Catalog, c, prev eval.Case) search.Request {
	said := "Done."
	if row, err := cat.Resolve(prev.Expected[0]); err == nil {
		said = "I used " + cat.Tool(row).Name + ": " + cat.Tool(row).Description
	}
	return search.Request{IncludeCore: new(bool), Messages: search.Conversation{
		{Role: "user", Content: prev.Query},
		{Role: "assistant", Content: said},
		{Role: "user", Content: c.Query},
	}}
}

// confidence returns the answer's confidence and its first tool.
func confidence(svc *search.Service, req search.Request, m search.Mode) (float64, string, error) {
	req.Mode = m
	res, err := svc.Search(context.Background(), req, access.Caller{})
	if err != nil || res.Confidence == nil || len(res.Tools) == 0 {
		return 0, "", err
	}
	return float64(*res.Confidence), res.Tools[0].Server + "/" + res.Tools[0].Name, nil
}
