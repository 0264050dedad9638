package analysis

import (
	_ "embed"
	"encoding/binary"
	"errors"
	"sync"
	"unsafe"

	"github.com/toolsearch/toolsearch/pkg/internal/strtab"
)

// The WordNet tables hold about 100,000 stems. As maps of strings to
// slices they were 12.5 MB of small objects that every garbage collection
// marked, whatever the catalog: most of a small catalog's live heap, and
// so most of the collector's work per query. Packed, a table is a few flat
// slices and one string: the stems numbered by a strtab.Table, lists of
// numbers as runs.

// runs are lists of numbers, numbered, back to back.
type runs struct {
	end  []uint32 // list i is vals[end[i-1]:end[i]]
	vals []int32
}

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
	words strtab.Table
	keys  int32
	lists runs
}

// has reports whether word is a key.
func (r *relations) has(word string) bool {
	id := r.words.Number(word)
	return id >= 0 && id < r.keys
}

// get is word's list, nil when word is not a key; a fresh slice.
func (r *relations) get(word string) []string {
	id := r.words.Number(word)
	if id < 0 || id >= r.keys {
		return nil
	}
	ids := r.lists.at(id)
	out := make([]string, len(ids))
	for i, n := range ids {
		out[i] = r.words.String(n)
	}
	return out
}

// lexiconBin is the WordNet tables packed (tables.encode), generated from
// derived.tsv, hypernyms.tsv and words.tsv by `go test ./pkg/analysis -run
// TestLexiconFile -update`; that test fails when it is not what they and
// this package's stemmer give. Loading it keeps the words' text and the
// lists of numbers where the binary has them (see u32s), so a process
// neither parses the tables nor holds a second copy of them.
//
//go:embed lexicon.bin
var lexiconBin string

// tables is the WordNet tables and their name (Lexicon).
type tables struct {
	lexicon   string
	derived   *relations
	hypernyms hierarchy
	words     *strtab.Table // the other words' terms (see Known)
}

var englishTables = sync.OnceValue(func() tables {
	t, err := decodeTables(lexiconBin)
	if err != nil {
		panic("analysis: lexicon.bin: " + err.Error()) // TestLexiconFile reads the same bytes
	}
	return t
})

const lexiconMagic = "toolsearch lexicon 3\n"

func decodeTables(data string) (tables, error) {
	r := &lexReader{data: data, size: len(data)}
	if r.take(len(lexiconMagic)) != lexiconMagic {
		return tables{}, errors.New("not a packed lexicon")
	}
	r.pad()
	var t tables
	t.lexicon = r.str()
	t.derived = &relations{words: r.stems(), keys: int32(r.u32()), lists: r.runs()}
	t.hypernyms = hierarchy{up: r.runs(), words: r.runs(), stems: r.stems(), keyed: int32(r.u32()), of: r.runs()}
	words := r.stems()
	t.words = &words
	if r.err == nil && r.data != "" {
		r.err = errors.New("data after the tables")
	}
	return t, r.err
}

// lexReader reads what encode wrote; the first problem sticks.
type lexReader struct {
	data string
	size int // of the whole, which the padding is counted from
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

// str reads a string and the padding after it.
func (r *lexReader) str() string {
	s := r.take(int(r.u32()))
	r.pad()
	return s
}

// pad skips the zeros encode writes after a string, which start the next
// list of numbers at a multiple of four bytes.
func (r *lexReader) pad() {
	if n := (4 - (r.size-len(r.data))%4) % 4; r.take(n) != "\x00\x00\x00"[:n] && r.err == nil {
		r.err = errors.New("bad padding")
	}
}

// littleEndian is whether this machine stores numbers as lexicon.bin
// does.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// u32s reads a list of numbers. Where the machine's order is the file's
// and the list is aligned (the binary's copy is: lexiconBin starts
// aligned, and encode pads), the list is the data's own bytes: the
// tables' numbers (about 2 MB) are not copied to the heap beside the
// pages of the binary that hold them. They are never written.
func (r *lexReader) u32s() []uint32 {
	n := int(r.u32())
	s := r.take(4 * n)
	if len(s) < 4*n {
		return nil
	}
	if p := unsafe.StringData(s); n > 0 && littleEndian && uintptr(unsafe.Pointer(p))%4 == 0 {
		return unsafe.Slice((*uint32)(unsafe.Pointer(p)), n)
	}
	out := make([]uint32, n)
	for i := range out {
		out[i] = binary.LittleEndian.Uint32([]byte(s[4*i : 4*i+4]))
	}
	return out
}

func (r *lexReader) stems() strtab.Table {
	text := r.str()
	end := r.u32s()
	if r.err != nil {
		return strtab.Table{}
	}
	// The numbers must stay within the text, as strtab.Table slices it.
	prev := uint32(0)
	for _, e := range end {
		if e < prev || int(e) > len(text) {
			r.err = errors.New("word ends out of order")
			return strtab.Table{}
		}
		prev = e
	}
	return strtab.FromText(text, end)
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
	// The same bits read as signed (encode wrote them from int32s).
	vals := unsafe.Slice((*int32)(unsafe.Pointer(unsafe.SliceData(raw))), len(raw))
	return runs{end: end, vals: vals}
}
