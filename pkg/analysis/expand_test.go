package analysis

import "slices"

// Expand and Broader are query expansion as package bm25 does it, one term
// at a time from each term's cached expansion: here over a whole query, as
// the tests state it.

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

// Broader returns, for each term that known rejects and that has no
// derivationally related form known accepts, the nearest hypernyms that
// known accepts: "headache" meets a catalog that says "symptom" through
// ache and pain. The walk stops at the first level with a known word, so a
// term gets the most specific words the catalog has for it; it is the
// back-off of a specific request to a catalog's general wording. Words
// among terms themselves do not count.
func (a *Analyzer) Broader(terms []string, known func(string) bool) []string {
	var out []string
	for _, t := range terms {
		if known(t) || slices.ContainsFunc(a.Derived(t), known) {
			continue
		}
		out = BroaderFrom(a.HypernymLevels(t, known), terms, out)
	}
	return out
}
