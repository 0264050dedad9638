package analysis

import (
	_ "embed"
	"encoding/binary"
	"errors"
	"hash/maphash"
	"iter"
	"maps"
	"slices"
	"strings"
	"sync"
)

// The WordNet tables hold about 100,000 stems. As maps of strings to
// slices they were 12.5 MB of small objects that every garbage collection
// marked, whatever the catalog: most of a small catalog's live heap, and
// so most of the collector's work per query. Packed, a table is a few flat
// slices and one string.

// stemTable numbers a set of strings in the order they were added, kept as
// one string and an open-addressing table of their numbers.
type stemTable struct {
	text  string
	end   []uint32 // word i is text[end[i-1]:end[i]]
	slots []int32  // by hash: a word's number + 1; 0 is empty
	seed  maphash.Seed
}

func packStems(list []string) stemTable {
	end := make([]uint32, len(list))
	var b strings.Builder
	for i, s := range list {
		b.WriteString(s)
		end[i] = uint32(b.Len())
	}
	return newStemTable(b.String(), end)
}

// newStemTable numbers the words of text that end at end; the lookup table
// is built here, with this process's hash seed.
func newStemTable(text string, end []uint32) stemTable {
	w := stemTable{text: text, end: end, seed: maphash.MakeSeed()}
	size := 1
	for size < 2*len(end) {
		size <<= 1
	}
	w.slots = make([]int32, size)
	for i := range end {
		for j := w.slot(w.word(int32(i))); ; j = (j + 1) & (size - 1) {
			if w.slots[j] == 0 {
				w.slots[j] = int32(i) + 1
				break
			}
		}
	}
	return w
}

func (w *stemTable) slot(s string) int {
	return int(maphash.String(w.seed, s) & uint64(len(w.slots)-1))
}

func (w *stemTable) word(i int32) string {
	start := uint32(0)
	if i > 0 {
		start = w.end[i-1]
	}
	return w.text[start:w.end[i]]
}

// id is s's number, or -1.
func (w *stemTable) id(s string) int32 {
	if len(w.slots) == 0 {
		return -1
	}
	for j := w.slot(s); ; j = (j + 1) & (len(w.slots) - 1) {
		n := w.slots[j]
		if n == 0 {
			return -1
		}
		if w.word(n-1) == s {
			return n - 1
		}
	}
}

// runs are lists of numbers, numbered, back to back.
type runs struct {
	end  []uint32 // list i is vals[end[i-1]:end[i]]
	vals []int32
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

func (r runs) at(i int32) []int32 {
	start := uint32(0)
	if i > 0 {
		start = r.end[i-1]
	}
	return r.vals[start:r.end[i]:r.end[i]]
}

// relations maps words to lists of words: the first keys numbers of
// words are the keys, with lists by the same numbers; the rest are words
// that only appear in lists.
type relations struct {
	words stemTable
	keys  int32
	lists runs
}

// packRelations packs m, with its keys in sorted order.
func packRelations(m map[string][]string) *relations {
	keys := slices.Sorted(maps.Keys(m))
	n := newNumbering(keys)
	lists := make([][]int32, len(keys))
	for i, k := range keys {
		lists[i] = n.ids(m[k])
	}
	return &relations{words: packStems(n.all), keys: int32(len(keys)), lists: packRuns(lists)}
}

// numbering numbers words as they are first seen, keys first.
type numbering struct {
	all []string
	of  map[string]int32
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

// has reports whether word is a key.
func (r *relations) has(word string) bool {
	id := r.words.id(word)
	return id >= 0 && id < r.keys
}

// get is word's list, nil when word is not a key; a fresh slice.
func (r *relations) get(word string) []string {
	id := r.words.id(word)
	if id < 0 || id >= r.keys {
		return nil
	}
	ids := r.lists.at(id)
	out := make([]string, len(ids))
	for i, n := range ids {
		out[i] = r.words.word(n)
	}
	return out
}

// all is every key with its list.
func (r *relations) all() iter.Seq2[string, []string] {
	return func(yield func(string, []string) bool) {
		for id := range r.keys {
			w := r.words.word(id)
			if !yield(w, r.get(w)) {
				return
			}
		}
	}
}

// lexiconBin is the WordNet tables packed (tables.encode), generated from
// derived.tsv and hypernyms.tsv by `go test ./pkg/analysis -run
// TestLexiconFile -update`; that test fails when it is not what they and
// this package's stemmer give. Loading it copies the numbers out (pointer
// free) and keeps the words' text where the binary has it, so a process
// neither parses the tables nor keeps garbage from parsing them.
//
//go:embed lexicon.bin
var lexiconBin string

// tables is the WordNet tables and their name (Lexicon).
type tables struct {
	lexicon   string
	derived   *relations
	hypernyms hierarchy
}

var englishTables = sync.OnceValue(func() tables {
	t, err := decodeTables(lexiconBin)
	if err != nil {
		panic("analysis: lexicon.bin: " + err.Error()) // TestLexiconFile reads the same bytes
	}
	return t
})

const lexiconMagic = "toolsearch lexicon 1\n"

// encode writes t as decodeTables reads it: little-endian uint32s, each
// list after its length.
func (t tables) encode() []byte {
	b := []byte(lexiconMagic)
	b = appendString(b, t.lexicon)
	b = t.derived.words.appendTo(b)
	b = binary.LittleEndian.AppendUint32(b, uint32(t.derived.keys))
	b = t.derived.lists.appendTo(b)
	h := t.hypernyms
	b = h.up.appendTo(b)
	b = h.words.appendTo(b)
	b = h.stems.appendTo(b)
	b = binary.LittleEndian.AppendUint32(b, uint32(h.keyed))
	return h.of.appendTo(b)
}

func decodeTables(data string) (tables, error) {
	r := &lexReader{data: data}
	if r.take(len(lexiconMagic)) != lexiconMagic {
		return tables{}, errors.New("not a packed lexicon")
	}
	var t tables
	t.lexicon = r.str()
	t.derived = &relations{words: r.stems(), keys: int32(r.u32()), lists: r.runs()}
	t.hypernyms = hierarchy{up: r.runs(), words: r.runs(), stems: r.stems(), keyed: int32(r.u32()), of: r.runs()}
	if r.err == nil && r.data != "" {
		r.err = errors.New("data after the tables")
	}
	return t, r.err
}

func appendString(b []byte, s string) []byte {
	return append(binary.LittleEndian.AppendUint32(b, uint32(len(s))), s...)
}

func appendU32s[T uint32 | int32](b []byte, xs []T) []byte {
	b = binary.LittleEndian.AppendUint32(b, uint32(len(xs)))
	for _, x := range xs {
		b = binary.LittleEndian.AppendUint32(b, uint32(x))
	}
	return b
}

func (w *stemTable) appendTo(b []byte) []byte { return appendU32s(appendString(b, w.text), w.end) }

func (r runs) appendTo(b []byte) []byte { return appendU32s(appendU32s(b, r.end), r.vals) }

// lexReader reads what encode wrote; the first problem sticks.
type lexReader struct {
	data string
	err  error
}

func (r *lexReader) take(n int) string {
	if r.err != nil || n < 0 || n > len(r.data) {
		if r.err == nil {
			r.err = errors.New("truncated")
		}
		return ""
	}
	s := r.data[:n]
	r.data = r.data[n:]
	return s
}

func (r *lexReader) u32() uint32 {
	s := r.take(4)
	if len(s) < 4 {
		return 0
	}
	return binary.LittleEndian.Uint32([]byte(s))
}

func (r *lexReader) str() string { return r.take(int(r.u32())) }

func (r *lexReader) u32s() []uint32 {
	n := int(r.u32())
	s := r.take(4 * n)
	if len(s) < 4*n {
		return nil
	}
	out := make([]uint32, n)
	for i := range out {
		out[i] = binary.LittleEndian.Uint32([]byte(s[4*i : 4*i+4]))
	}
	return out
}

func (r *lexReader) stems() stemTable {
	text := r.str()
	end := r.u32s()
	if r.err != nil {
		return stemTable{}
	}
	// The numbers must stay within the text, as stemTable.word slices it.
	prev := uint32(0)
	for _, e := range end {
		if e < prev || int(e) > len(text) {
			r.err = errors.New("word ends out of order")
			return stemTable{}
		}
		prev = e
	}
	return newStemTable(text, end)
}

func (r *lexReader) runs() runs {
	end := r.u32s()
	raw := r.u32s()
	if r.err != nil {
		return runs{}
	}
	prev := uint32(0)
	for _, e := range end {
		if e < prev || int(e) > len(raw) {
			r.err = errors.New("list ends out of order")
			return runs{}
		}
		prev = e
	}
	vals := make([]int32, len(raw))
	for i, v := range raw {
		vals[i] = int32(v)
	}
	return runs{end: end, vals: vals}
}
