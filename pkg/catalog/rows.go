package catalog

import (
	"hash/maphash"
	"math/bits"
)

// rowTable finds rows of a catalog by a key their tools give (server and
// name, or name alone): an open-addressing hash table of row numbers that
// keeps no keys of its own, since each row's tool holds its key. At
// 100,000 tools it takes 1 MB where a Go map of strings took 4 to 6, and
// filling it hashes each tool once where sorting the rows compared
// strings 1.7 million times.
//
// Rows with equal keys all go in, in row order along one probe sequence,
// so that every tool sharing a name is found.
type rowTable struct {
	seed  maphash.Seed
	slots []int32 // row + 1; 0 is empty
	mask  uint64
}

func newRowTable(n int) rowTable {
	// At most half full, so a probe sequence stays short.
	size := 1 << bits.Len(uint(2*n))
	return rowTable{seed: maphash.MakeSeed(), slots: make([]int32, size), mask: uint64(size - 1)}
}

// each calls yield with the rows whose slots lie on hash's probe sequence,
// in row order, until yield returns false.
func (t *rowTable) each(hash uint64, yield func(row int) bool) {
	for i := hash & t.mask; t.slots[i] != 0; i = (i + 1) & t.mask {
		if !yield(int(t.slots[i] - 1)) {
			return
		}
	}
}

// add puts row on hash's probe sequence, after any rows already on it.
func (t *rowTable) add(hash uint64, row int) {
	i := hash & t.mask
	for t.slots[i] != 0 {
		i = (i + 1) & t.mask
	}
	t.slots[i] = int32(row + 1)
}

func (t *rowTable) keyHash(server, name string) uint64 {
	return maphash.Comparable(t.seed, [2]string{server, name})
}

func (t *rowTable) nameHash(name string) uint64 { return maphash.String(t.seed, name) }
