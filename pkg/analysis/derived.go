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

// Expand returns terms followed by the relatives of each term that known
// rejects, that known accepts: a query word the catalog never uses
// ("multiplication") meets the tools through the forms it does use
// ("multiply"). A word the catalog knows is never expanded, so expansion
// adds evidence only where there was none. known is typically a ranker's
// vocabulary; the result is terms itself when nothing is added.
func (a *Analyzer) Expand(terms []string, known func(string) bool) []string {
	out := slices.Clip(terms) // the first append copies: the caller's array is never written
	for _, t := range terms {
		if known(t) {
			continue
		}
		for _, r := range a.Derived(t) {
			if known(r) && !slices.Contains(out, r) {
				out = append(out, r)
			}
		}
	}
	return out
}

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
