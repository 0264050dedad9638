package analysis

import (
	"slices"
	"strings"
)

// Derived returns a term's derivationally related forms, analysed as terms
// are ("multiplication": multipli), nil for a word WordNet does not relate.
// Each call makes a new slice: callers keep it per term (package bm25).
func (a *Analyzer) Derived(term string) []string { return a.derived().get(term) }

// derivedMap maps each word of derived.tsv (WordNet 3.0's derivationally
// related forms and pertainyms, derived.LICENSE, one word a line with its
// relatives; relgen writes it), analysed by stem, to its relatives,
// analysed the same way. It runs when lexicon.bin is generated
// (TestLexiconFile), not in the service.
func derivedMap(tsv string, stem func(string) string, stop map[string]bool) map[string][]string {
	m := make(map[string][]string, 30000)
	for line := range strings.Lines(tsv) {
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

func englishDerived() *relations { return englishTables().derived }
