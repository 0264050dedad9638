package eval

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/toolsearch/toolsearch/pkg/internal/readfile"
)

// Regression is an expected tool that ranks worse than in the baseline:
// it dropped out of the top k (Now 0) or moved down.
type Regression struct {
	Case     string `json:"case"`
	Category string `json:"category"`
	Tool     string `json:"tool"`
	Was      int    `json:"was"` // rank in the baseline; 0: not in its top k
	Now      int    `json:"now"` // rank now; 0: not in the top k
}

// LoadReport reads a report written with -format json.
func LoadReport(path string) (*Report, error) {
	data, err := readfile.Read(path, maxFileBytes)
	if err != nil {
		return nil, fmt.Errorf("%w: baseline: %w", ErrBadInput, err)
	}
	var rep Report
	if err := json.Unmarshal(data, &rep); err != nil {
		return nil, fmt.Errorf("%w: baseline %s: not a JSON eval report: %w", ErrBadInput, path, err)
	}
	if len(rep.Cases) == 0 {
		return nil, fmt.Errorf("%w: baseline %s: no cases", ErrBadInput, path)
	}
	for _, c := range rep.Cases {
		if c.Ranks == nil {
			return nil, fmt.Errorf("%w: baseline %s: case %q has no ranks (written by an older toolsearch?)", ErrBadInput, path, c.ID)
		}
	}
	return &rep, nil
}

// CheckBaseline refuses a baseline that Compare could not hold a run of
// cases at k to: one written at another k (ranks past the shorter k
// would read as dropped, or go unseen), or one sharing no case with
// cases, against which every run would pass "no regressions" having
// compared nothing.
func CheckBaseline(base *Report, cases []Case, k int) error {
	if base.K != k {
		return fmt.Errorf("%w: the baseline was written with -k %d, this run has -k %d: its ranks do not compare", ErrBadInput, base.K, k)
	}
	ids := make(map[string]bool, len(base.Cases))
	for _, c := range base.Cases {
		ids[c.ID] = true
	}
	for _, c := range cases {
		if ids[c.ID] {
			return nil
		}
	}
	return fmt.Errorf("%w: the baseline shares no case id with these %d cases: nothing would be compared (was it written for other cases?)", ErrBadInput, len(cases))
}

// Compare lists every expected tool of a case in both reports that ranks
// worse now than in base, most fallen first. Cases only in one report are
// ignored: they were added or removed, not regressed.
func Compare(base, now *Report) []Regression {
	was := map[string]CaseResult{}
	for _, c := range base.Cases {
		was[c.ID] = c
	}
	var out []Regression
	for _, c := range now.Cases {
		b, ok := was[c.ID]
		if !ok {
			continue
		}
		for tool, r := range c.Ranks {
			old, ok := b.Ranks[tool]
			if !ok {
				continue
			}
			if worse(old, r) {
				out = append(out, Regression{Case: c.ID, Category: c.Category, Tool: tool, Was: old, Now: r})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		di, dj := drop(out[i]), drop(out[j])
		if di != dj {
			return di > dj
		}
		if out[i].Case != out[j].Case {
			return out[i].Case < out[j].Case
		}
		return out[i].Tool < out[j].Tool
	})
	return out
}

// worse: dropping out of the top k, or a higher rank.
func worse(was, now int) bool {
	switch {
	case was == 0:
		return false
	case now == 0:
		return true
	}
	return now > was
}

func drop(r Regression) int {
	if r.Now == 0 {
		return 1 << 20
	}
	return r.Now - r.Was
}

func rankWord(r int) string {
	if r == 0 {
		return "out of the top k"
	}
	return fmt.Sprintf("rank %d", r)
}
