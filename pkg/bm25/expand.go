package bm25

import (
	"slices"

	"github.com/toolsearch/toolsearch/pkg/analysis"
)

// expansion is what a query term looks up in an index, worked out once per
// term and index and kept (see expand): its own list, its concepts',
// its derivationally related forms that the index has, and, for a term the
// index lacks, the levels of its hypernyms that it has.
type expansion struct {
	ref      // the term itself
	concepts []ref
	derived  []ref
	levels   [][]string // analysis.Analyzer.HypernymLevels
}

// ref is a term or concept token, its list (-1: no document has it) and
// that list's idf; name labels a concept in explanations.
type ref struct {
	term, name string
	list       int64
	idf        float64
}

// expand returns term's expansion, from its slot or worked out now.
func (ix *Index) expand(term string) *expansion {
	if e := ix.cache.Get(term); e != nil {
		return e
	}
	e := expansion{ref: ix.ref(term, "")}
	for _, c := range analysis.English.Related(term) {
		// The token as the documents' text was analysed, so stemmed.
		e.concepts = append(e.concepts, ix.ref(analysis.Stem(conceptToken(c)), conceptName(c)))
	}
	for _, d := range analysis.English.Derived(term) {
		if r := ix.ref(d, ""); r.list >= 0 {
			e.derived = append(e.derived, r)
		}
	}
	if e.list < 0 && len(e.derived) == 0 {
		e.levels = analysis.English.HypernymLevels(term, ix.Has)
	}
	return ix.cache.Put(term, e)
}

// list is term's list, -1 when no document has it.
func (ix *Index) list(term string) int64 {
	if k, ok := ix.termID(term); ok {
		return int64(k)
	}
	return -1
}

// ref is term looked up: its list and that list's idf.
func (ix *Index) ref(term, name string) ref {
	l := ix.list(term)
	return ref{term: term, name: name, list: l, idf: ix.listIDF(l)}
}

// listIDF is the idf of list (-1: no document has it).
func (ix *Index) listIDF(list int64) float64 {
	df := 0
	if list >= 0 {
		df = ix.df(uint32(list))
	}
	return ix.idf(df)
}

// PrepareTerms is Prepare for a query already split into analysed terms.
// A term no tool uses is expanded to its derivationally related forms that
// some tool does (analysis.Analyzer.Derived), or failing those to its
// nearest hypernyms some tool uses, at BroaderWeight (the first level of
// analysis.Analyzer.HypernymLevels with a word not in the query). A term
// some tool does use also looks up its
// derived forms, at DerivedWeight. Each two neighbouring terms of the query
// are also looked up as a pair, at PairWeight. What a term expands to
// comes from the index's cache of expansions.
func (ix *Index) PrepareTerms(terms []string) Query {
	return ix.PrepareTermsInto(Query{}, terms)
}

// PrepareTermsInto is PrepareTerms in dst's memory: dst is a query its
// caller no longer uses, and the two must not be used together.
func (ix *Index) PrepareTermsInto(dst Query, terms []string) Query {
	asked := len(terms)
	// On the stack for a query of common length: these end with the call.
	var expBuf [24]*expansion
	var broaderBuf [8]string
	exps := expBuf[:0]
	for _, t := range terms {
		exps = append(exps, ix.expand(t))
	}
	// Broader, then Expand, as analysis does them.
	broader := broaderBuf[:0]
	for _, e := range exps {
		if e.levels != nil {
			broader = analysis.BroaderFrom(e.levels, terms, broader)
		}
	}
	expanded := slices.Clip(terms)
	for _, e := range exps[:asked] {
		if e.list >= 0 {
			continue
		}
		for _, r := range e.derived {
			if !slices.Contains(expanded, r.term) {
				expanded = append(expanded, r.term)
				exps = append(exps, ix.expand(r.term))
			}
		}
	}
	q := Query{ix: ix, terms: slices.Grow(dst.terms[:0], len(expanded)+len(broader)+asked)}
	// qt.idf is its list's (kept with the expansions), weighted here.
	add := func(qt queryTerm, weight float64) {
		// Linear: a query has tens of terms (MaxQueryBytes bounds it).
		for _, x := range q.terms {
			if x.list == qt.list && (qt.list >= 0 || x.term == qt.term) {
				return
			}
		}
		qt.idf *= weight
		q.terms = append(q.terms, qt)
	}
	for i, t := range expanded {
		w := 1.0
		if number(t) {
			w = NumberWeight
		}
		add(queryTerm{list: exps[i].list, idf: exps[i].idf, from: fromQuery, name: t, term: t}, w)
	}
	for _, e := range exps {
		for _, c := range e.concepts {
			add(queryTerm{list: c.list, idf: c.idf, from: fromConcept, name: c.name, term: c.term}, 1)
		}
	}
	for _, t := range broader {
		r := ix.ref(t, t)
		add(queryTerm{list: r.list, idf: r.idf, from: fromBroader, name: t, term: t}, BroaderWeight)
	}
	for _, e := range exps[:asked] {
		if e.list < 0 {
			continue // its relatives are query terms already, at full weight
		}
		for _, r := range e.derived {
			add(queryTerm{list: r.list, idf: r.idf, from: fromDerived, name: r.term, term: r.term}, DerivedWeight)
		}
	}
	for i := 1; i < asked; i++ {
		a, b := exps[i-1].list, exps[i].list
		if a < 0 || b < 0 {
			continue
		}
		if k, ok := slices.BinarySearch(ix.pairs, pairKey(uint32(a), uint32(b))); ok { // most pairs are in no tool: no term to carry
			l := int64(ix.firstPair) + int64(k)
			add(queryTerm{list: l, idf: ix.listIDF(l), from: fromQuery, name: terms[i-1], second: terms[i]}, PairWeight)
		}
	}
	return q
}

// MaxCorrections is how many of a query's terms Correct reads as
// misspellings at most: a query has few, and each costs some hundreds of
// lookups the first time it is seen.
const MaxCorrections = 8

// maxRead is how many of a query's terms no tool has Correct asks the
// dictionary about (analysis.Analyzer.Known, a few lookups each): a query
// of English the catalog lacks looks up no more than one of nonsense.
const maxRead = 4 * MaxCorrections

// minTypoLen is the shortest term read as a misspelling: a shorter one
// is one edit from too many words to say which was meant (measured on
// the shared sets with typing errors added: evals/README.md).
const minTypoLen = 4

// maxTypoLen bounds the lookups one term costs.
const maxTypoLen = 24

// Fix is a query term read as a misspelling or as a word typed without
// its accents (From) and the index's term read for it (To).
type Fix struct{ From, To string }

// Correct replaces, in place, a term that no tool has by the accented
// term some tool has that it spells without accents ("impaye" by
// "impayées", English or not: "cafe" by "café"); and a term that no tool
// has, that has no derived form some tool has and that is not an English
// word (analysis.Analyzer.Known), by the index's term one edit away, if it
// has one (see nearest). It replaces the first MaxCorrections such terms,
// among the first maxRead that no tool has. Since a dictionary word is
// never read as a misspelling, a query about what the catalog lacks stays
// a query about it. It appends each replacement to fixes, for the query's
// parts to read the same way (Prepare).
func (ix *Index) Correct(terms []string, fixes []Fix) []Fix {
	tried, read := 0, 0
	var vietnamese, asked bool // whether a term is Vietnamese, once asked
	for i, t := range terms {
		if tried == MaxCorrections || read == maxRead {
			break
		}
		e := ix.expand(t)
		if e.list >= 0 {
			continue
		}
		// The catalog's word typed without its accents, or the query's
		// accented word that the catalog spells without them.
		to, ok := ix.unaccented[t]
		if !ok && !analysis.IsASCII(t) {
			read++
			if !asked {
				vietnamese, asked = slices.ContainsFunc(terms, analysis.Vietnamese), true
			}
			u, found := analysis.English.Unaccented(t)
			to, ok = u, found && !vietnamese && ix.Has(u)
		}
		if ok {
			tried++
			fixes = append(fixes, Fix{From: t, To: to})
			terms[i] = to
			continue
		}
		if len(e.derived) > 0 || !misspellable(t) {
			continue
		}
		read++
		r := ix.typos.Get(t)
		if r == nil {
			if analysis.English.Known(t) {
				r = ix.typos.Put(t, reading{english: true})
			} else {
				r = ix.typos.Put(t, reading{as: ix.nearest(t)})
			}
		}
		if r.english {
			continue
		}
		tried++
		if r.as != "" {
			fixes = append(fixes, Fix{From: t, To: r.as})
			terms[i] = r.as
		}
	}
	return fixes
}

// reading is how Correct reads a term no tool has, kept for the next
// query that has it: an English word, or a misspelling of as ("": of
// nothing the index has).
type reading struct {
	as      string
	english bool
}

// misspellable reports whether term may be read as a misspelling: lower-
// case ASCII letters, minTypoLen to maxTypoLen of them.
func misspellable(term string) bool {
	if len(term) < minTypoLen || len(term) > maxTypoLen {
		return false
	}
	for i := 0; i < len(term); i++ {
		if term[i] < 'a' || term[i] > 'z' {
			return false
		}
	}
	return true
}

// nearest is the term of the index one edit from term (a letter
// dropped, added or changed, or two neighbours swapped), the one most
// tools have, the first found of equals; "" for none.
func (ix *Index) nearest(term string) string {
	best, bestDF := "", 0
	try := func(b []byte) {
		if k, ok := ix.termID(string(b)); ok {
			if df := ix.df(k); df > bestDF {
				best, bestDF = string(b), df
			}
		}
	}
	buf := make([]byte, 0, len(term)+1)
	for i := range len(term) {
		try(append(append(buf[:0], term[:i]...), term[i+1:]...))
		if i+1 < len(term) && term[i] != term[i+1] {
			b := append(buf[:0], term...)
			b[i], b[i+1] = b[i+1], b[i]
			try(b)
		}
	}
	for i := range len(term) + 1 {
		for c := byte('a'); c <= 'z'; c++ {
			try(append(append(append(buf[:0], term[:i]...), c), term[i:]...))
			if i < len(term) && c != term[i] {
				b := append(buf[:0], term...)
				b[i] = c
				try(b)
			}
		}
	}
	return best
}

// With is q with o's terms that q lacks added at weight: a query's own
// terms at full weight, and words that only say what it is about (a
// conversation's earlier turns) at less. Added at less than full weight,
// they are optional: a document that lacks one is rated (Fraction) as if
// it were not asked, since the conversation may have moved on from it.
// At full weight (an ask with too few words to say what it wants) they
// are what is asked, and count as q's own. The result's terms are in q's
// memory.
func (q Query) With(o Query, weight float64) Query {
	for _, t := range o.terms {
		if !slices.ContainsFunc(q.terms, func(x queryTerm) bool {
			return x.list == t.list && (t.list >= 0 || x.term == t.term) && x.second == t.second
		}) {
			t.idf *= weight
			t.earlier, t.optional = true, weight < 1
			q.terms = append(q.terms, t)
		}
	}
	return q
}
