package analysis

import (
	"slices"
	"strings"

	"github.com/toolsearch/toolsearch/pkg/internal/strtab"
)

// hierarchy is the parsed hypernym table: synsets by number, each with
// the numbers of its hypernyms and its words' stems, and each word's stem
// with the hypernyms of its first senses. It is packed (packed.go): the
// first keyed stems are the words with hypernyms, the rest only synsets'
// words.
type hierarchy struct {
	up    runs // synset -> its hypernyms
	words runs // synset -> its words, numbered in stems
	stems strtab.Table
	keyed int32
	of    runs // stem number < keyed -> its first senses' synsets
}

// senses is term's first senses' synsets; false when WordNet gives it
// no hypernyms.
func (h *hierarchy) senses(term string) ([]int32, bool) {
	id := h.stems.Number(term)
	if id < 0 || id >= h.keyed {
		return nil, false
	}
	return h.of.at(id), true
}

// HypernymLevels is the walk up from a term's first senses to its
// hypernyms, "headache" meeting a catalog that says "symptom" through ache
// and pain: level by level: each level's words that known accepts, in the
// walk's order, each once. It depends on term and known alone, so a
// ranker can keep it per term.
func (a *Analyzer) HypernymLevels(term string, known func(string) bool) [][]string {
	h := a.hypernyms()
	var levels [][]string
	level, _ := h.senses(term)
	for range hypernymDepth {
		var words []string
		var next []int32
		for _, s := range level {
			for _, id := range h.words.at(s) {
				if w := h.stems.String(id); known(w) && !slices.Contains(words, w) {
					words = append(words, w)
				}
			}
			for _, u := range h.up.at(s) {
				if !slices.Contains(next, u) {
					next = append(next, u)
				}
			}
		}
		levels = append(levels, words)
		if len(next) == 0 {
			break
		}
		level = next
	}
	return levels
}

// BroaderFrom appends to out, once each, the words of the first of levels
// (HypernymLevels) that has a word not among terms, leaving those out.
func BroaderFrom(levels [][]string, terms, out []string) []string {
	for _, words := range levels {
		found := false
		for _, w := range words {
			if !slices.Contains(terms, w) {
				found = true
				if !slices.Contains(out, w) {
					out = append(out, w)
				}
			}
		}
		if found {
			break
		}
	}
	return out
}

// hypernymDepth is the table's height: relgen writes four levels.
const hypernymDepth = 4

func englishHypernyms() hierarchy { return englishTables().hypernyms }

// Warm loads the WordNet tables and builds the unaccented letters' table
// now, once per process (a few milliseconds: the tables are packed when
// generated), so that no query pays for it; package search starts it in the background when it builds an
// index, and a query that arrives before it is done waits for it.
func (a *Analyzer) Warm() {
	a.derived()
	a.hypernyms()
	if a.known != nil {
		a.known()
	}
	unaccentedLetters() // 0.4 ms
	nfkcInert()         // 0.4 ms, for the first query that is not ASCII
}

// InLexicon reports whether term (analysed) is a word of the dictionary
// the WordNet tables come from: one with a derived form or a hypernym.
// What learns from queries keeps only such words, or the catalog's own.
func (a *Analyzer) InLexicon(term string) bool {
	if a.derived().has(term) {
		return true
	}
	h := a.hypernyms()
	_, ok := h.senses(term)
	return ok
}

// Known reports whether term (analysed) is an English word: one of the
// dictionary's (InLexicon), in any part of speech or inflection it lists,
// its regular inflections that the stemmer leaves apart from their base
// (queued, wider, highest, women), or a function word. A query term no
// tool has that is not known may be a misspelling of one some tool has.
func (a *Analyzer) Known(term string) bool {
	if a.listed(term) {
		return true
	}
	for _, b := range bases(term) {
		if a.listed(a.stem(b)) {
			return true
		}
	}
	return false
}

// listed reports whether term is the term of a word the tables list.
func (a *Analyzer) listed(term string) bool {
	return a.InLexicon(term) || a.known != nil && a.known().Number(term) >= 0
}

// bases are the words term may be a regular inflection of, as WordNet's
// morphology reads them (the stemmer has taken -s, -ed and -ing off
// already): wider, highest, happier, bigger; queu (queued) as queue; women
// as woman. Some are not words; Known looks each up.
func bases(term string) []string {
	var out []string
	for _, suf := range [...]string{"est", "er"} {
		w, ok := strings.CutSuffix(term, suf)
		if !ok || len(w) < 2 {
			continue
		}
		out = append(out, w, w+"e")
		if n := len(w); w[n-1] == w[n-2] {
			out = append(out, w[:n-1]) // bigger, big
		}
		if w, ok := strings.CutSuffix(w, "i"); ok {
			out = append(out, w+"y") // happier, happy
		}
	}
	if w, ok := strings.CutSuffix(term, "men"); ok {
		out = append(out, w+"man")
	}
	return append(out, term+"e")
}

func englishWords() *strtab.Table { return englishTables().words }

// Lexicon names the WordNet tables that expand queries and their version:
// the WordNet release and a hash of the tables as generated, so two
// replicas that rank differently can be told apart on the status page.
func Lexicon() string { return lexicon() }

func lexicon() string { return englishTables().lexicon }
