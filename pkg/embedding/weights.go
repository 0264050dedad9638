package embedding

import "github.com/toolsearch/toolsearch/pkg/internal/prefault"

// table maps feature hashes to a value: an idf, a count, a dense id.
// Feature hashes are FNV-1a, already mixed, so their low bits pick the
// slot; open addressing with linear probing keeps a lookup to one cache
// line where a Go map's group probe touches three, and building and
// embedding a catalog look up features by the million.
type table[V float32 | uint32] struct {
	slots []tableSlot[V] // a power of two, at most 3/4 full
	n     int
	// The zero hash marks an empty slot; a feature that hashes to 0 keeps
	// its value here.
	zero    V
	hasZero bool
}

type tableSlot[V float32 | uint32] struct {
	hash uint64
	val  V
}

// A table is made for the entries its caller is about to add, and a grown
// one is 3/8 full already, its entries spread over every page: its slots
// are made resident at once (prefault). A fresh process faulted them in
// a page at a time, a third of a 10,000-tool build's page faults.
func newTable[V float32 | uint32](capacity int) *table[V] {
	size := 16
	for size*3/4 < capacity {
		size *= 2
	}
	return &table[V]{slots: prefault.Make[tableSlot[V]](size)}
}

// Len is the number of hashes with a value.
func (t *table[V]) Len() int {
	if t.hasZero {
		return t.n + 1
	}
	return t.n
}

// get returns the value of hash, if it has one.
func (t *table[V]) get(hash uint64) (V, bool) {
	if hash == 0 {
		return t.zero, t.hasZero
	}
	mask := uint64(len(t.slots) - 1)
	for i := hash & mask; ; i = (i + 1) & mask {
		switch t.slots[i].hash {
		case hash:
			return t.slots[i].val, true
		case 0:
			return 0, false
		}
	}
}

// at returns hash's value for writing, adding hash with the zero value if
// it had none (added says so). The pointer is valid until the next at.
func (t *table[V]) at(hash uint64) (v *V, added bool) {
	if hash == 0 {
		added = !t.hasZero
		t.hasZero = true
		return &t.zero, added
	}
	mask := uint64(len(t.slots) - 1)
	i := hash & mask
	for t.slots[i].hash != hash && t.slots[i].hash != 0 {
		i = (i + 1) & mask
	}
	if t.slots[i].hash == 0 {
		if (t.n+1)*4 > len(t.slots)*3 {
			t.grow()
			return t.at(hash)
		}
		t.slots[i].hash = hash
		t.n++
		added = true
	}
	return &t.slots[i].val, added
}

func (t *table[V]) grow() {
	old := t.slots
	t.slots = prefault.Make[tableSlot[V]](2 * len(old))
	mask := uint64(len(t.slots) - 1)
	for _, s := range old {
		if s.hash == 0 {
			continue
		}
		i := s.hash & mask
		for t.slots[i].hash != 0 {
			i = (i + 1) & mask
		}
		t.slots[i] = s
	}
}

// each calls f for every hash and its value.
func (t *table[V]) each(f func(hash uint64, val V)) {
	if t.hasZero {
		f(0, t.zero)
	}
	for _, s := range t.slots {
		if s.hash != 0 {
			f(s.hash, s.val)
		}
	}
}

// update replaces every value v with f(v).
func (t *table[V]) update(f func(V) V) {
	if t.hasZero {
		t.zero = f(t.zero)
	}
	for i := range t.slots {
		if t.slots[i].hash != 0 {
			t.slots[i].val = f(t.slots[i].val)
		}
	}
}
