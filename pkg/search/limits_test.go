package search

import (
	"strings"
	"testing"
)

// TestOverRequestLimit: the core and templates that make answers of more
// tools than OpenAI takes in one request are warned of.
func TestOverRequestLimit(t *testing.T) {
	rows := func(n int) []int { return make([]int, n) }
	tests := []struct {
		name  string
		pol   *policy
		warns []string
	}{
		{"a small core and template", &policy{core: rows(3), templateNames: []string{"t"}, templates: map[string]resolvedTemplate{"t": {rows: rows(20)}}}, nil},
		{"a core at the limit", &policy{core: rows(78)}, nil},
		{"a core past it", &policy{core: rows(79)}, []string{"the core lists 79 tools: with top_k up to 50 an answer holds up to 129"}},
		{"a template past it with the core", &policy{core: rows(3), templateNames: []string{"all"}, templates: map[string]resolvedTemplate{"all": {rows: rows(126)}}},
			[]string{`template "all" answers with 129 tools, core included`}},
	}
	for _, tt := range tests {
		got := strings.Join(overRequestLimit(tt.pol), "\n")
		if len(tt.warns) == 0 && got != "" {
			t.Errorf("%s: warned %q", tt.name, got)
		}
		for _, w := range tt.warns {
			if !strings.Contains(got, w) {
				t.Errorf("%s: warnings %q lack %q", tt.name, got, w)
			}
		}
	}
}
