package analysis

import (
	_ "embed"
	"slices"
	"strings"
	"sync"
)

// derivedTSV is WordNet 3.0's derivationally related forms and pertainyms
// (derived.LICENSE), one word a line with its relatives; relgen writes it.
//
//go:embed derived.tsv
var derivedTSV string

// Derived returns a term's derivationally related forms, analysed as terms
// are ("multiplication": multipli), nil for a word WordNet does not relate.
// The slice is shared: callers must not modify it.
func (a *Analyzer) Derived(term string) []string { return a.derived()[term] }

// parseDerived maps each word of the table, analysed by stem, to its
// relatives, analysed the same way. It runs once, on first use (about
// 30,000 lines).
func parseDerived(stem func(string) string, stop map[string]bool) map[string][]string {
	m := make(map[string][]string, 30000)
	for line := range strings.Lines(derivedTSV) {
		word, rels, ok := strings.Cut(strings.TrimSuffix(line, "\n"), "\t")
		if !ok || strings.HasPrefix(word, "#") || stop[word] {
			continue
		}
		t := stem(word)
		for r := range strings.FieldsSeq(rels) {
			if rt := stem(r); rt != t && !stop[r] && !slices.Contains(m[t], rt) {
				m[t] = append(m[t], rt)
			}
		}
	}
	return m
}

var englishDerived = sync.OnceValue(func() map[string][]string { return parseDerived(Stem, stop) })
