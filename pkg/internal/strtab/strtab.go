// Package strtab numbers a set of strings kept as one string and flat
// arrays: a stand-in for a map[string]int32 that holds no pointer for the
// garbage collector to follow, for the large vocabularies that are built
// once and then only read (WordNet's stems, a keyword index's terms). A
// map of 500,000 strings is 500,000 small objects that every collection
// marks, and about 40 bytes a string; a Table is about 16 plus the text.
// Its probe table, Probes, also serves keys kept elsewhere (a catalog's
// rows, whose tools hold their names).
package strtab

import (
	"hash/maphash"
	"math/bits"
	"strings"
)

// Probes is an open-addressing table of numbers by hash, with linear
// probing, that keeps no keys: the caller holds each number's key and
// compares it. Numbers with equal hashes all go in, in the order added,
// along one probe sequence.
type Probes struct {
	slots []int32 // a number + 1; 0 is empty
	mask  uint64
}

// NewProbes makes room for n numbers, at most half full so that a probe
// sequence stays short.
func NewProbes(n int) Probes {
	size := 1 << bits.Len(uint(2*n))
	return Probes{slots: make([]int32, size), mask: uint64(size - 1)}
}

// Add puts n on hash's probe sequence, after the numbers already on it.
func (p *Probes) Add(hash uint64, n int) {
	i := hash & p.mask
	for p.slots[i] != 0 {
		i = (i + 1) & p.mask
	}
	p.slots[i] = int32(n + 1)
}

// Each calls yield with the numbers on hash's probe sequence, in the
// order added, until yield returns false.
func (p *Probes) Each(hash uint64, yield func(n int) bool) {
	for i := hash & p.mask; p.slots[i] != 0; i = (i + 1) & p.mask {
		if !yield(int(p.slots[i] - 1)) {
			return
		}
	}
}

// Table numbers strings from 0 in the order they were given.
type Table struct {
	text   string
	end    []uint32 // string i is text[end[i-1]:end[i]]
	probes Probes
	seed   maphash.Seed
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
	t := Table{text: text, end: end, probes: NewProbes(len(end)), seed: maphash.MakeSeed()}
	for i := range end {
		t.probes.Add(maphash.String(t.seed, t.String(int32(i))), i)
	}
	return t
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
	found := int32(-1)
	if t.probes.slots == nil {
		return found // the zero Table
	}
	t.probes.Each(maphash.String(t.seed, s), func(n int) bool {
		if t.String(int32(n)) == s {
			found = int32(n)
			return false
		}
		return true
	})
	return found
}

// Text and Ends are what FromText takes, to write a table out.
func (t *Table) Text() string   { return t.text }
func (t *Table) Ends() []uint32 { return t.end }
