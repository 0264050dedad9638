// Package analysis turns tool texts and queries into terms, by one chain
// that BM25, the local embedder and explain all share, so a word cannot
// meet its variant in one ranker and miss it in another. The chain, in
// order: split on punctuation and case changes (Words), lower-case, drop
// stop words, stem; then, per term, its related concepts (Related).
package analysis

import (
	"strings"

	"github.com/toolsearch/toolsearch/pkg/internal/memo"
	"github.com/toolsearch/toolsearch/pkg/internal/strtab"
)

// Analyzer is one configuration of the chain. It is immutable and safe
// for concurrent use.
type Analyzer struct {
	stop    map[string]bool
	stem    func(string) string
	related map[string][]string
	derived func() *relations // stem -> stems of derivationally related words
	// hypernyms is WordNet's hierarchy above each word (hypernyms.go).
	hypernyms func() hierarchy
	// known is the terms of the dictionary's other words (Known).
	known func() *strtab.Table
	words *memo.Memo[word] // query words' terms
}

// English is the chain every ranker uses: the light English stemmer
// (Stem), the stop words below, the concept groups of related.go and
// WordNet's derivationally related forms (derived.go), hypernyms
// (hypernyms.go) and words.
var English = &Analyzer{stop: stop, stem: Stem, related: concepts, derived: englishDerived, hypernyms: englishHypernyms, known: englishWords, words: memo.New[word]()}

// Terms returns text's stemmed, stop-word-free tokens, in order: the unit
// every ranker matches on. A word's term comes from the analyzer's memo
// when a recent query had the word.
func (a *Analyzer) Terms(text string) []string {
	return a.AppendTerms(make([]string, 0, len(text)/6+1), text) // about one term per six bytes of English
}

// AppendTerms is Terms appending to dst, for a caller that reuses it.
func (a *Analyzer) AppendTerms(dst []string, text string) []string {
	AppendWords(text, func(w string) {
		if t, ok := a.term(w); ok {
			dst = append(dst, t)
		}
	})
	return dst
}

// term is w's term, or false for a stop word, through the memo, so that
// a query's words are stemmed once however often they are asked, and what
// queries ask cannot grow it.
func (a *Analyzer) term(w string) (string, bool) {
	if e := a.words.Get(w); e != nil {
		return e.term, !e.stop
	}
	// Kept under a copy of the word: neither the word nor its stem may pin
	// the caller's text.
	w = strings.Clone(w)
	e := word{stop: a.stop[w]}
	if !e.stop {
		e.term = a.stem(w)
	}
	a.words.Put(w, e)
	return e.term, !e.stop
}

// word is what the memo keeps of a word: its term, or that it is a stop
// word.
type word struct {
	term string
	stop bool
}

// Related returns the concept ids ("c:NAME") of a term as Terms gives it:
// one per group of related words the term belongs to.
func (a *Analyzer) Related(term string) []string { return a.related[strings.ToLower(term)] }

// stop lists words too common in tool descriptions and queries to say
// anything about which tool is meant.
var stop = map[string]bool{
	"a": true, "an": true, "and": true, "are": true, "as": true, "at": true, "be": true, "by": true,
	"can": true, "do": true, "for": true, "from": true, "i": true, "if": true, "in": true, "into": true,
	"is": true, "it": true, "its": true, "me": true, "my": true, "of": true, "on": true, "or": true,
	"our": true, "please": true, "so": true, "that": true, "the": true, "their": true, "this": true,
	"to": true, "us": true, "was": true, "we": true, "what": true, "which": true, "will": true,
	"with": true, "you": true, "your": true, "would": true, "could": true, "should": true, "want": true,
	"need": true, "help": true, "like": true, "some": true, "any": true, "all": true, "about": true,
	"there": true, "these": true, "those": true, "them": true, "they": true, "have": true, "has": true,
	"been": true, "also": true, "just": true, "than": true, "then": true, "when": true, "where": true,
	"how": true, "who": true, "whom": true, "why": true,
	"assist": true, "provide": true, "provides": true, "information": true, "hi": true, "hey": true, "hello": true,
	"tell": true, "give": true, "know": true, "sort": true, "sorts": true, "kind": true, "kinds": true,
	"something": true, "anything": true, "really": true, "am": true, "im": true, "m": true,
}
