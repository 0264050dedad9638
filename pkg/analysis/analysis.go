// Package analysis turns tool texts and queries into terms, by one chain
// that BM25, the local embedder and explain all share, so a word cannot
// meet its variant in one ranker and miss it in another. The chain, in
// order: split on punctuation and case changes (Words), lower-case, drop
// stop words, stem; then, per term, its related concepts (Related).
package analysis

import "strings"

// Analyzer is one configuration of the chain. It is immutable and safe
// for concurrent use.
type Analyzer struct {
	stop    map[string]bool
	stem    func(string) string
	related map[string][]string
	derived func() map[string][]string // stem -> stems of derivationally related words
	// hypernyms is WordNet's hierarchy above each word (hypernyms.go).
	hypernyms func() hierarchy
}

// English is the chain every ranker uses: the light English stemmer
// (Stem), the stop words below, the concept groups of related.go and
// WordNet's derivationally related forms (derived.go) and hypernyms
// (hypernyms.go).
var English = &Analyzer{stop: stop, stem: Stem, related: concepts, derived: englishDerived, hypernyms: englishHypernyms}

// Terms returns text's stemmed, stop-word-free tokens, in order: the unit
// every ranker matches on.
func (a *Analyzer) Terms(text string) []string {
	out := make([]string, 0, len(text)/6+1) // about one term per six bytes of English
	AppendWords(text, func(w string) {
		if !a.stop[w] {
			out = append(out, a.stem(w))
		}
	})
	return out
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
