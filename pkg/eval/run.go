package eval

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/toolsearch/toolsearch/pkg/catalog"
	"github.com/toolsearch/toolsearch/pkg/search"
)

// Searcher answers a search request with the tools a caller would get, in
// order.
type Searcher interface {
	Search(ctx context.Context, req search.Request) (Answer, error)
}

// Answer is what a search returned.
type Answer struct {
	Tools      []ToolKey
	Confidence *float32 // absent for template, select and list answers
}

// Options adjust a run.
type Options struct {
	K int // score the first K tools of each answer
	// Mode, when set, is the ranking mode of every case that does not set
	// its own.
	Mode string
	// Progress, when set, is called after each case with how many are done.
	Progress func(done, total int)
}

// Depth is how far down the ranking a miss is looked for, so a report can
// say "rank 14" rather than only "missed".
const Depth = 50

// Report is the outcome of a run. Recall is micro-averaged (expected tools
// found over expected tools) unless named Mean.
type Report struct {
	K          int              `json:"k"`
	Summary    Metrics          `json:"summary"`
	Categories []CategoryReport `json:"categories"`
	Latency    Latency          `json:"latency"`
	// Calibration is absent when no answer carried a confidence.
	Calibration *Calibration `json:"calibration,omitempty"`
	// Regressions lists, when the run was compared with a baseline, every
	// expected tool that ranks worse than it did there.
	Regressions []Regression `json:"regressions,omitempty"`
	Misses      []Miss       `json:"misses"`
	Cases       []CaseResult `json:"cases"`
}

// Metrics are the scores over a set of cases.
type Metrics struct {
	Cases      int     `json:"cases"`
	Expected   int     `json:"expected"`
	Found      int     `json:"found"`
	Recall     float64 `json:"recall"`      // Found / Expected
	RecallAt1  float64 `json:"recall_at_1"` // expected tools found at rank 1, over Expected
	RecallAt5  float64 `json:"recall_at_5"` // ... within rank min(5, k)
	RecallMean float64 `json:"recall_mean"` // mean of per-case recall
	HitAt1     float64 `json:"hit_at_1"`    // cases whose first tool is expected
	MRR        float64 `json:"mrr"`         // mean reciprocal rank of the first expected tool within k
	NDCG       float64 `json:"ndcg"`        // binary-relevance nDCG@k
}

// CategoryReport is Metrics for one category.
type CategoryReport struct {
	Category string `json:"category"`
	Metrics
}

// Latency summarises per-query search time, in milliseconds.
type Latency struct {
	MeanMS  float64 `json:"mean_ms"`
	P50MS   float64 `json:"p50_ms"`
	P95MS   float64 `json:"p95_ms"`
	MaxMS   float64 `json:"max_ms"`
	TotalMS float64 `json:"total_ms"`
}

// Miss is an expected tool that was not in the top k.
type Miss struct {
	Case     string   `json:"case"`
	Category string   `json:"category"`
	Query    string   `json:"query"`
	Expected string   `json:"expected"`
	Rank     int      `json:"rank"` // 1-based rank within Depth; 0 when not in the top Depth
	Top      []string `json:"top"`  // what ranked first instead
}

// CaseResult is one case's outcome.
type CaseResult struct {
	ID         string   `json:"id"`
	Category   string   `json:"category"`
	Expected   int      `json:"expected"`
	Found      int      `json:"found"`
	FoundAt1   int      `json:"found_at_1"`
	FoundAt5   int      `json:"found_at_5"`
	FirstRank  int      `json:"first_rank"` // rank of the best expected tool within k; 0 when none
	NDCG       float64  `json:"ndcg"`
	TookMS     float64  `json:"took_ms"`
	Confidence *float32 `json:"confidence,omitempty"`
	Error      string   `json:"error,omitempty"`
	// Ranks maps each expected tool (server/tool) to its rank in the
	// answer's first k tools, 0 when it was not there: what -baseline
	// compares.
	Ranks map[string]int `json:"ranks"`
}

// Passed reports whether every expected tool was in the top k.
func (c CaseResult) Passed() bool { return c.Error == "" && c.Found == c.Expected }

// Search is the search a case sends: its own fields, its query, top_k k,
// and no core tools unless it asks (core presence is its own category, not
// a bonus on every case).
func (c Case) Search(k int, opts Options) search.Request {
	var req search.Request
	if c.Request != nil {
		req = *c.Request
	}
	if req.Query == "" && len(req.Messages) == 0 {
		req.Query = c.Query
	}
	if req.TopK == nil {
		req.TopK = &k
	}
	if req.IncludeCore == nil {
		no := false
		req.IncludeCore = &no
	}
	if req.Mode == "" {
		req.Mode = search.Mode(opts.Mode)
	}
	return req
}

// Run resolves every case's labels against cat (an unknown or ambiguous
// name is ErrBadInput, before any query runs), then sends each case's
// request. An expected tool counts as found when it is among the first k
// tools of the answer; for each miss, a second search Depth deep finds the
// rank it did have.
func Run(ctx context.Context, cat *catalog.Catalog, cases []Case, s Searcher, opts Options) (*Report, error) {
	k := opts.K
	if k < 1 || k > Depth {
		return nil, fmt.Errorf("%w: k must be between 1 and %d", ErrBadInput, Depth)
	}
	want, err := Resolve(cat, cases)
	if err != nil {
		return nil, err
	}
	rep := &Report{K: k, Misses: []Miss{}}
	took := make([]float64, 0, len(cases))
	for i, c := range cases {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if opts.Progress != nil && i > 0 {
			opts.Progress(i, len(cases))
		}
		req := c.Search(k, opts)
		start := time.Now()
		ans, err := s.Search(ctx, req)
		if errors.Is(err, ErrRefused) {
			return nil, err
		}
		got := ans.Tools
		ms := float64(time.Since(start).Microseconds()) / 1000
		took = append(took, ms)
		cr := CaseResult{ID: c.ID, Category: c.Category, Expected: len(want[i]), TookMS: ms, Confidence: ans.Confidence, Ranks: map[string]int{}}
		if err != nil {
			cr.Error = err.Error()
			for _, w := range want[i] {
				cr.Ranks[w.String()] = 0
				rep.Misses = append(rep.Misses, Miss{Case: c.ID, Category: c.Category, Query: c.Query, Expected: w.String(), Top: []string{"error: " + err.Error()}})
			}
			rep.Cases = append(rep.Cases, cr)
			continue
		}
		got = got[:min(len(got), k)]
		rank := ranks(got)
		var deep map[ToolKey]int // ranks Depth deep, fetched on the first miss
		var dcg, idcg float64
		for j := range min(len(want[i]), k) {
			idcg += 1 / math.Log2(float64(j+2))
		}
		for _, w := range want[i] {
			r := rank[w]
			if r >= 1 && r <= k {
				cr.Ranks[w.String()] = r
				cr.Found++
				if r == 1 {
					cr.FoundAt1++
				}
				if r <= 5 {
					cr.FoundAt5++
				}
				dcg += 1 / math.Log2(float64(r+1))
				if cr.FirstRank == 0 || r < cr.FirstRank {
					cr.FirstRank = r
				}
				continue
			}
			if deep == nil {
				deep = map[ToolKey]int{}
				dreq := req
				depth := Depth
				dreq.TopK = &depth
				if more, err := s.Search(ctx, dreq); err == nil {
					deep = ranks(more.Tools)
				}
			}
			cr.Ranks[w.String()] = 0
			top := make([]string, 0, 3)
			for _, t := range got[:min(3, len(got))] {
				top = append(top, t.String())
			}
			rep.Misses = append(rep.Misses, Miss{Case: c.ID, Category: c.Category, Query: c.Query, Expected: w.String(), Rank: deep[w], Top: top})
		}
		cr.NDCG = dcg / idcg
		rep.Cases = append(rep.Cases, cr)
	}
	rep.Summary = score(rep.Cases, cases, "")
	cats := map[string]bool{}
	for _, c := range cases {
		cats[c.Category] = true
	}
	names := make([]string, 0, len(cats))
	for c := range cats {
		names = append(names, c)
	}
	sort.Strings(names)
	for _, name := range names {
		rep.Categories = append(rep.Categories, CategoryReport{Category: name, Metrics: score(rep.Cases, cases, name)})
	}
	rep.Latency = latency(took)
	rep.Calibration = calibrate(rep.Cases)
	return rep, nil
}

// Calibration relates the answers' confidence to whether their first tool
// was right.
type Calibration struct {
	Cases int `json:"cases"` // answers that carried a confidence
	// Threshold best separates right from wrong first tools: answers at or
	// above it are "confident".
	Threshold float64 `json:"threshold"`
	Accuracy  float64 `json:"accuracy"` // of "confident" as a predictor of a right first tool
	// ConfidentShare is the share of answers at or above Threshold, and
	// PrecisionConfident / PrecisionUnconfident their hit@1 on each side.
	ConfidentShare       float64 `json:"confident_share"`
	PrecisionConfident   float64 `json:"hit_at_1_confident"`
	PrecisionUnconfident float64 `json:"hit_at_1_unconfident"`
}

func calibrate(cases []CaseResult) *Calibration {
	type pt struct {
		c   float64
		hit bool
	}
	var pts []pt
	for _, c := range cases {
		if c.Confidence != nil && c.Error == "" {
			pts = append(pts, pt{float64(*c.Confidence), c.FirstRank == 1})
		}
	}
	if len(pts) == 0 {
		return nil
	}
	slices.SortFunc(pts, func(a, b pt) int {
		switch {
		case a.c < b.c:
			return -1
		case a.c > b.c:
			return 1
		}
		return 0
	})
	hitsAbove := 0
	for _, p := range pts {
		if p.hit {
			hitsAbove++
		}
	}
	// Threshold at pts[i].c: pts[:i] unconfident, pts[i:] confident.
	best, bestI, missesBelow := -1, 0, 0
	for i := 0; i <= len(pts); i++ {
		if i > 0 && i < len(pts) && pts[i].c == pts[i-1].c {
			if !pts[i-1].hit {
				missesBelow++
			} else {
				hitsAbove--
			}
			continue
		}
		if correct := missesBelow + hitsAbove; correct > best {
			best, bestI = correct, i
		}
		if i < len(pts) {
			if !pts[i].hit {
				missesBelow++
			} else {
				hitsAbove--
			}
		}
	}
	cal := &Calibration{Cases: len(pts), Accuracy: float64(best) / float64(len(pts))}
	if bestI < len(pts) {
		cal.Threshold = pts[bestI].c
	} else {
		cal.Threshold = pts[len(pts)-1].c + 1e-6
	}
	var conf, confHit, unconfHit int
	for i, p := range pts {
		if i >= bestI {
			conf++
			if p.hit {
				confHit++
			}
		} else if p.hit {
			unconfHit++
		}
	}
	cal.ConfidentShare = float64(conf) / float64(len(pts))
	if conf > 0 {
		cal.PrecisionConfident = float64(confHit) / float64(conf)
	}
	if n := len(pts) - conf; n > 0 {
		cal.PrecisionUnconfident = float64(unconfHit) / float64(n)
	}
	return cal
}

func ranks(got []ToolKey) map[ToolKey]int {
	rank := make(map[ToolKey]int, len(got))
	for r, t := range got {
		if _, dup := rank[t]; !dup {
			rank[t] = r + 1
		}
	}
	return rank
}

// score computes Metrics over the cases of one category ("" for all).
func score(results []CaseResult, cases []Case, category string) Metrics {
	var m Metrics
	var recallSum, rrSum, ndcgSum float64
	var at1, at5 int
	for i, r := range results {
		if category != "" && cases[i].Category != category {
			continue
		}
		m.Cases++
		m.Expected += r.Expected
		m.Found += r.Found
		at1 += r.FoundAt1
		at5 += r.FoundAt5
		recallSum += float64(r.Found) / float64(r.Expected)
		if r.FirstRank == 1 {
			m.HitAt1++
		}
		if r.FirstRank > 0 {
			rrSum += 1 / float64(r.FirstRank)
		}
		ndcgSum += r.NDCG
	}
	if m.Cases == 0 {
		return m
	}
	n := float64(m.Cases)
	m.Recall = float64(m.Found) / float64(m.Expected)
	m.RecallAt1 = float64(at1) / float64(m.Expected)
	m.RecallAt5 = float64(at5) / float64(m.Expected)
	m.RecallMean = recallSum / n
	m.HitAt1 /= n
	m.MRR = rrSum / n
	m.NDCG = ndcgSum / n
	return m
}

func latency(ms []float64) Latency {
	if len(ms) == 0 {
		return Latency{}
	}
	sorted := slices.Clone(ms)
	slices.Sort(sorted)
	var total float64
	for _, x := range ms {
		total += x
	}
	pct := func(p float64) float64 {
		return sorted[min(len(sorted)-1, int(math.Ceil(p*float64(len(sorted))))-1)]
	}
	return Latency{MeanMS: total / float64(len(ms)), P50MS: pct(0.50), P95MS: pct(0.95), MaxMS: sorted[len(sorted)-1], TotalMS: total}
}
