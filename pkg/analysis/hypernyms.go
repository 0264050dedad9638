package analysis

import (
	"crypto/sha256"
	_ "embed"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// hypernymsTSV is WordNet 3.0's hypernym hierarchy above each word's first
// noun and verb sense, four levels up (derived.LICENSE); relgen writes it.
//
//go:embed hypernyms.tsv
var hypernymsTSV string

// hierarchy is the parsed hypernym table: synsets by number, each with
// the numbers of its hypernyms and its words' stems, and each word's stem
// with the hypernyms of its first senses.
type hierarchy struct {
	up    [][]int32
	words [][]string
	of    map[string][]int32
}

// HypernymLevels is the walk up from a term's first senses to its
// hypernyms, "headache" meeting a catalog that says "symptom" through ache
// and pain: level by level: each level's words that known accepts, in the
// walk's order, each once. It depends on term and known alone, so a
// ranker can keep it per term.
func (a *Analyzer) HypernymLevels(term string, known func(string) bool) [][]string {
	h := a.hypernyms()
	var levels [][]string
	level := h.of[term]
	for range hypernymDepth {
		var words []string
		var next []int32
		for _, s := range level {
			for _, w := range h.words[s] {
				if known(w) && !slices.Contains(words, w) {
					words = append(words, w)
				}
			}
			for _, u := range h.up[s] {
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

// parseHypernyms reads the table: "@n<TAB>hypernyms<TAB>words" lines
// number the synsets in order, then "word<TAB>hypernyms" lines. Words are
// analysed by stem; words with one stem share their hypernyms. A number
// that names no synset is dropped, so no walk can index out of range.
func parseHypernyms(stem func(string) string, stop map[string]bool) hierarchy {
	h := hierarchy{of: make(map[string][]int32, 60000)}
	nums := func(s string) []int32 {
		var out []int32
		for f := range strings.FieldsSeq(s) {
			if n, err := strconv.ParseInt(f, 10, 32); err == nil && n >= 0 {
				out = append(out, int32(n))
			}
		}
		return out
	}
	for line := range strings.Lines(hypernymsTSV) {
		line = strings.TrimSuffix(line, "\n")
		if strings.HasPrefix(line, "#") {
			continue
		}
		if rest, ok := strings.CutPrefix(line, "@"); ok {
			_, rest, _ = strings.Cut(rest, "\t")
			ups, words, _ := strings.Cut(rest, "\t")
			var ws []string
			for w := range strings.FieldsSeq(words) {
				if !stop[w] {
					ws = append(ws, stem(w))
				}
			}
			h.up = append(h.up, nums(ups))
			h.words = append(h.words, ws)
			continue
		}
		word, ups, ok := strings.Cut(line, "\t")
		if !ok || stop[word] {
			continue
		}
		t := stem(word)
		for _, u := range nums(ups) {
			if !slices.Contains(h.of[t], u) {
				h.of[t] = append(h.of[t], u)
			}
		}
	}
	outside := func(n int32) bool { return int(n) >= len(h.up) }
	for i := range h.up {
		h.up[i] = slices.DeleteFunc(h.up[i], outside)
	}
	for t := range h.of {
		h.of[t] = slices.DeleteFunc(h.of[t], outside)
	}
	return h
}

var englishHypernyms = sync.OnceValue(func() hierarchy { return parseHypernyms(Stem, stop) })

// Warm parses the WordNet tables now, once per process, each on a core
// of its own, so that no query pays for it; package search starts it in
// the background when it builds an index, and a query that arrives before
// it is done waits for it.
func (a *Analyzer) Warm() {
	done := make(chan struct{})
	go func() {
		defer close(done)
		a.derived()
	}()
	a.hypernyms()
	<-done
}

// InLexicon reports whether term (analysed) is a word of the dictionary
// the WordNet tables come from: one with a derived form or a hypernym.
// What learns from queries keeps only such words, or the catalog's own.
func (a *Analyzer) InLexicon(term string) bool {
	if _, ok := a.derived()[term]; ok {
		return true
	}
	_, ok := a.hypernyms().of[term]
	return ok
}

// Lexicon names the WordNet tables that expand queries and their version:
// the WordNet release and a hash of the tables as generated, so two
// replicas that rank differently can be told apart on the status page.
func Lexicon() string { return lexicon() }

var lexicon = sync.OnceValue(func() string {
	h := sha256.New()
	io.WriteString(h, derivedTSV)
	io.WriteString(h, hypernymsTSV)
	return fmt.Sprintf("wordnet-3.0 derived+hypernyms sha256:%x", h.Sum(nil)[:6])
})
