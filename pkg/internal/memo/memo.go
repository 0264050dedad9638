// Package memo keeps the results of a pure function of a string in a
// fixed number of slots: bounded whatever callers ask (a query's words,
// terms, expansions), free of locks, and safe for concurrent use. It is
// the per-query cache of the analysis chain, the keyword index and the
// local embedder.
//
// Slots go in pairs: a key may sit in either slot of its pair, and a new
// key takes the first, moving the first's key to the second. With one
// slot a key, two hot keys that hash alike evicted each other on every
// query that had both: at 4,096 slots and a few hundred hot terms, about
// one lookup in ten missed; in pairs, three must hash alike.
package memo

import (
	"hash/maphash"
	"sync/atomic"
)

// Size is the number of slots: pairs of them, a power of two.
const Size = 4096

// Memo maps a string to a value of type V. Values are shared by every
// caller that looks their key up, so they must not be changed once put.
type Memo[V any] struct {
	seed  maphash.Seed
	slots [Size]atomic.Pointer[entry[V]]
}

type entry[V any] struct {
	key string
	val V
}

// New returns an empty memo.
func New[V any]() *Memo[V] { return &Memo[V]{seed: maphash.MakeSeed()} }

// Get returns key's value, or nil when it is not kept.
func (m *Memo[V]) Get(key string) *V {
	i := m.pair(key)
	if e := m.slots[i].Load(); e != nil && e.key == key {
		return &e.val
	}
	if e := m.slots[i+1].Load(); e != nil && e.key == key {
		return &e.val
	}
	return nil
}

// Put keeps val as key's value and returns where it is kept. key must
// not pin more than itself (a word sliced from a request pins the
// request: keep a clone).
func (m *Memo[V]) Put(key string, val V) *V {
	i := m.pair(key)
	e := &entry[V]{key: key, val: val}
	// Two stores, not one swap: a reader between them may miss the moved
	// key, and work it out again, which costs a lookup and nothing else.
	if old := m.slots[i].Load(); old != nil && old.key != key {
		m.slots[i+1].Store(old)
	}
	m.slots[i].Store(e)
	return &e.val
}

// pair is the first slot of key's pair.
func (m *Memo[V]) pair(key string) int {
	return int(maphash.String(m.seed, key)%(Size/2)) * 2
}
