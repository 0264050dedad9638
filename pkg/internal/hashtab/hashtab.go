// Package hashtab is an open-addressing table from 64-bit keys to a
// number, for the builds' counting: a feature's idf, count or dense id in
// the local embedder, a word pair's count and list in BM25. Both look
// keys up by the million, where a Go map's group probe touches three
// cache lines and linear probing mostly one.
package hashtab

import "github.com/toolsearch/toolsearch/pkg/internal/prefault"

// Table maps uint64 keys to a V. Its zero value is not usable; see New.
type Table[V float32 | uint32] struct {
	slots []slot[V] // a power of two, at most 3/4 full
	shift uint8     // 64 - log2(len(slots))
	n     int
	// The zero key marks an empty slot; key 0's value is kept here.
	zero    V
	hasZero bool
}

type slot[V float32 | uint32] struct {
	key uint64
	val V
}

// New returns a table for capacity keys. A table is made for the keys its
// caller is about to add, and a grown one is 3/8 full at once, its keys
// spread over every page: its slots are made resident at once
// (prefault). A fresh process faulted them in a page at a time, a third
// of a 10,000-tool build's page faults.
func New[V float32 | uint32](capacity int) *Table[V] {
	size, shift := 16, uint8(60)
	for size*3/4 < capacity {
		size, shift = size*2, shift-1
	}
	return &Table[V]{slots: prefault.Make[slot[V]](size), shift: shift}
}

// home is key's first slot: the high bits of its Fibonacci hash, so keys
// that differ only in their high bits (BM25's pairs of term numbers)
// spread as well as hashes do.
func (t *Table[V]) home(key uint64) uint64 { return (key * 0x9e3779b97f4a7c15) >> t.shift }

// Len is the number of keys with a value.
func (t *Table[V]) Len() int {
	if t.hasZero {
		return t.n + 1
	}
	return t.n
}

// Get returns the value of key, if it has one.
func (t *Table[V]) Get(key uint64) (V, bool) {
	if key == 0 {
		return t.zero, t.hasZero
	}
	mask := uint64(len(t.slots) - 1)
	for i := t.home(key); ; i = (i + 1) & mask {
		switch t.slots[i].key {
		case key:
			return t.slots[i].val, true
		case 0:
			return 0, false
		}
	}
}

// At returns key's value for writing, adding key with the zero value if it
// had none (added says so). The pointer is valid until the next At.
func (t *Table[V]) At(key uint64) (v *V, added bool) {
	if key == 0 {
		added = !t.hasZero
		t.hasZero = true
		return &t.zero, added
	}
	mask := uint64(len(t.slots) - 1)
	i := t.home(key)
	for t.slots[i].key != key && t.slots[i].key != 0 {
		i = (i + 1) & mask
	}
	if t.slots[i].key == 0 {
		if (t.n+1)*4 > len(t.slots)*3 {
			t.grow()
			return t.At(key)
		}
		t.slots[i].key = key
		t.n++
		added = true
	}
	return &t.slots[i].val, added
}

func (t *Table[V]) grow() {
	old := t.slots
	t.slots, t.shift = prefault.Make[slot[V]](2*len(old)), t.shift-1
	mask := uint64(len(t.slots) - 1)
	for _, s := range old {
		if s.key == 0 {
			continue
		}
		i := t.home(s.key)
		for t.slots[i].key != 0 {
			i = (i + 1) & mask
		}
		t.slots[i] = s
	}
}

// Each calls f for every key and its value, in no particular order.
func (t *Table[V]) Each(f func(key uint64, val V)) {
	if t.hasZero {
		f(0, t.zero)
	}
	for _, s := range t.slots {
		if s.key != 0 {
			f(s.key, s.val)
		}
	}
}

// Update replaces every value v with f(v).
func (t *Table[V]) Update(f func(V) V) {
	if t.hasZero {
		t.zero = f(t.zero)
	}
	for i := range t.slots {
		if t.slots[i].key != 0 {
			t.slots[i].val = f(t.slots[i].val)
		}
	}
}
