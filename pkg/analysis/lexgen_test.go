package analysis

// The generator of lexicon.bin (TestLexiconFile -update): it parses the
// TSV files relgen writes, analyses their words with this package's
// stemmer and stop words, and packs them as the service loads them. The
// service never parses them; it lives here, with the test that keeps the
// file current.

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"iter"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/toolsearch/toolsearch/pkg/internal/strtab"
)

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

func packHierarchy(up [][]int32, synsetWords [][]string, of map[string][]int32) hierarchy {
	keys := slices.Sorted(maps.Keys(of))
	n := newNumbering(keys)
	ws := make([][]int32, len(synsetWords))
	for i, w := range synsetWords {
		ws[i] = n.ids(w)
	}
	senses := make([][]int32, len(keys))
	for i, k := range keys {
		senses[i] = of[k]
	}
	return hierarchy{up: packRuns(up), words: packRuns(ws), stems: strtab.New(n.all), keyed: int32(len(keys)), of: packRuns(senses)}
}

// parseHypernyms reads hypernyms.tsv, WordNet 3.0's hypernym hierarchy
// above each word's first noun and verb sense, four levels up
// (derived.LICENSE; relgen writes it): "@n<TAB>hypernyms<TAB>words" lines
// number the synsets in order, then "word<TAB>hypernyms" lines. Words are
// analysed by stem; words with one stem share their hypernyms. A number
// that names no synset is dropped, so no walk can index out of range. It
// runs when lexicon.bin is generated (TestLexiconFile), not in the service.
func parseHypernyms(tsv string, stem func(string) string, stop map[string]bool) hierarchy {
	h := hypernymMaps(tsv, stem, stop)
	return packHierarchy(h.up, h.words, h.of)
}

func hypernymMaps(tsv string, stem func(string) string, stop map[string]bool) unpacked {
	h := unpacked{of: make(map[string][]int32, 60000)}
	nums := func(s string) []int32 {
		var out []int32
		for f := range strings.FieldsSeq(s) {
			if n, err := strconv.ParseInt(f, 10, 32); err == nil && n >= 0 {
				out = append(out, int32(n))
			}
		}
		return out
	}
	for line := range strings.Lines(tsv) {
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

// lexiconName is Lexicon for the tables generated from the three files
// (and functionWords).
func lexiconName(derivedTSV, hypernymsTSV, wordsTSV string) string {
	h := sha256.New()
	io.WriteString(h, derivedTSV)
	io.WriteString(h, hypernymsTSV)
	io.WriteString(h, wordsTSV)
	io.WriteString(h, strings.Join(functionWords, " "))
	return fmt.Sprintf("wordnet-3.0 derived+hypernyms+words sha256:%x", h.Sum(nil)[:6])
}

// functionWords are English words of the closed classes WordNet leaves
// out (pronouns, determiners, prepositions, conjunctions, modal verbs):
// with words.tsv's, the words a query may use that are not misspellings.
// Some are stop words, whose terms a word that is not one can still give
// ("whats" is what).
var functionWords = strings.Fields(`
	what whatever which whichever whom whose whoever whomever
	this that these those there here where wherever when whenever however whether
	among amongst since until till unless although though while whilst during
	upon onto into unto toward towards within without throughout via per versus amid amidst
	beside besides beneath underneath despite except plus minus
	shall should would could might must ought cannot
	myself yourself yourselves himself herself itself ourselves themselves
	anyone anybody anything someone somebody something everyone everybody everything nobody nothing none
	hers ours yours theirs mine their else also yet
`)

// packWords numbers the terms of words.tsv's words and of functionWords,
// sorted, but for the terms the other tables have (known). Stop words
// count too: a word that is not one may have a stop word's term (having,
// have). Regular inflections are not listed: Known reads them back.
func packWords(tsv string, stem func(string) string, known func(string) bool) *strtab.Table {
	set := map[string]bool{}
	add := func(w string) {
		if t := stem(w); !known(t) {
			set[t] = true
		}
	}
	for line := range strings.Lines(tsv) {
		if w := strings.TrimSpace(line); w != "" && !strings.HasPrefix(w, "#") {
			add(w)
		}
	}
	for _, w := range functionWords {
		add(w)
	}
	words := strtab.New(slices.Sorted(maps.Keys(set)))
	return &words
}

// unpacked is the hypernym table as parsed, before packHierarchy.
type unpacked struct {
	up    [][]int32
	words [][]string
	of    map[string][]int32
}

func packRuns(lists [][]int32) runs {
	r := runs{end: make([]uint32, len(lists))}
	for i, l := range lists {
		r.vals = append(r.vals, l...)
		r.end[i] = uint32(len(r.vals))
	}
	r.vals = slices.Clip(r.vals)
	return r
}

func (r runs) len() int { return len(r.end) }

// packRelations packs m, with its keys in sorted order.
func packRelations(m map[string][]string) *relations {
	keys := slices.Sorted(maps.Keys(m))
	n := newNumbering(keys)
	lists := make([][]int32, len(keys))
	for i, k := range keys {
		lists[i] = n.ids(m[k])
	}
	return &relations{words: strtab.New(n.all), keys: int32(len(keys)), lists: packRuns(lists)}
}

func newNumbering(keys []string) *numbering {
	n := &numbering{all: slices.Clone(keys), of: make(map[string]int32, len(keys))}
	for i, k := range keys {
		n.of[k] = int32(i)
	}
	return n
}

func (n *numbering) ids(ws []string) []int32 {
	out := make([]int32, len(ws))
	for i, w := range ws {
		id, ok := n.of[w]
		if !ok {
			id = int32(len(n.all))
			n.of[w] = id
			n.all = append(n.all, w)
		}
		out[i] = id
	}
	return out
}

// all is every key with its list.
func (r *relations) all() iter.Seq2[string, []string] {
	return func(yield func(string, []string) bool) {
		for id := range r.keys {
			w := r.words.String(id)
			if !yield(w, r.get(w)) {
				return
			}
		}
	}
}

// encode writes t as decodeTables reads it: little-endian uint32s, each
// list after its length; each string padded with zeros to a multiple of
// four bytes, so that every list starts at one (lexReader.u32s).
func (t tables) encode() []byte {
	b := pad([]byte(lexiconMagic))
	b = appendString(b, t.lexicon)
	b = appendTable(b, &t.derived.words)
	b = binary.LittleEndian.AppendUint32(b, uint32(t.derived.keys))
	b = t.derived.lists.appendTo(b)
	h := t.hypernyms
	b = h.up.appendTo(b)
	b = h.words.appendTo(b)
	b = appendTable(b, &h.stems)
	b = binary.LittleEndian.AppendUint32(b, uint32(h.keyed))
	b = h.of.appendTo(b)
	return appendTable(b, t.words)
}

func appendString(b []byte, s string) []byte {
	return pad(append(binary.LittleEndian.AppendUint32(b, uint32(len(s))), s...))
}

func pad(b []byte) []byte {
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

func appendU32s[T uint32 | int32](b []byte, xs []T) []byte {
	b = binary.LittleEndian.AppendUint32(b, uint32(len(xs)))
	for _, x := range xs {
		b = binary.LittleEndian.AppendUint32(b, uint32(x))
	}
	return b
}

func appendTable(b []byte, t *strtab.Table) []byte {
	return appendU32s(appendString(b, t.Text()), t.Ends())
}

func (r runs) appendTo(b []byte) []byte { return appendU32s(appendU32s(b, r.end), r.vals) }

// numbering numbers words as they are first seen, keys first.
type numbering struct {
	all []string
	of  map[string]int32
}
