// Package strtab numbers a set of strings kept as one string and flat
// arrays: a stand-in for a map[string]int32 that holds no pointer for the
// garbage collector to follow, for the large vocabularies that are built
// once and then only read (WordNet's stems, a keyword index's terms). A
// map of 500,000 strings is 500,000 small objects that every collection
// marks, and about 40 bytes a string; a Table is about 16 plus the text.
package strtab

import (
	"hash/maphash"
	"strings"
)

// Table numbers strings from 0 in the order they were given.
type Table struct {
	text  string
	end   []uint32 // string i is text[end[i-1]:end[i]]
	slots []int32  // open addressing by hash: a number + 1; 0 is empty
	seed  maphash.Seed
}

// New numbers strs in order. Of equal strings, Number finds the first.
func New(strs []string) Table {
	end := make([]uint32, len(strs))
	var b strings.Builder
	for i, s := range strs {
		b.WriteString(s)
		end[i] = uint32(b.Len())
	}
	return FromText(b.String(), end)
}

// FromText numbers the strings of text that end at end (ascending, at
// most len(text): the caller checks). The lookup table is built here,
// with this process's hash seed.
func FromText(text string, end []uint32) Table {
	t := Table{text: text, end: end, seed: maphash.MakeSeed()}
	size := 1
	for size < 2*len(end) {
		size <<= 1
	}
	t.slots = make([]int32, size)
	for i := range end {
		j := t.home(t.String(int32(i)))
		for t.slots[j] != 0 {
			j = (j + 1) & (size - 1)
		}
		t.slots[j] = int32(i) + 1
	}
	return t
}

func (t *Table) home(s string) int {
	return int(maphash.String(t.seed, s) & uint64(len(t.slots)-1))
}

// Len is how many strings t numbers.
func (t *Table) Len() int { return len(t.end) }

// String is string i.
func (t *Table) String(i int32) string {
	start := uint32(0)
	if i > 0 {
		start = t.end[i-1]
	}
	return t.text[start:t.end[i]]
}

// Number is s's number, or -1.
func (t *Table) Number(s string) int32 {
	if len(t.slots) == 0 {
		return -1
	}
	for j := t.home(s); ; j = (j + 1) & (len(t.slots) - 1) {
		n := t.slots[j]
		if n == 0 {
			return -1
		}
		if t.String(n-1) == s {
			return n - 1
		}
	}
}

// Text and Ends are what FromText takes, to write a table out.
func (t *Table) Text() string   { return t.text }
func (t *Table) Ends() []uint32 { return t.end }
