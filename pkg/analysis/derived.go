package analysis

// Derived returns a term's derivationally related forms, analysed as terms
// are ("multiplication": multipli), nil for a word WordNet does not relate.
// Each call makes a new slice: callers keep it per term (package bm25).
func (a *Analyzer) Derived(term string) []string { return a.derived().get(term) }

func englishDerived() *relations { return englishTables().derived }
