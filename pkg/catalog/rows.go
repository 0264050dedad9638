package catalog

import (
	"hash/maphash"

	"github.com/toolsearch/toolsearch/pkg/internal/strtab"
)

// rowTable finds rows of a catalog by a key their tools give (server and
// name, or name alone): a table of row numbers by hash (strtab.Probes)
// that keeps no keys of its own, since each row's tool holds its key. At
// 100,000 tools it takes 1 MB where a Go map of strings took 4 to 6, and
// filling it hashes each tool once where sorting the rows compared
// strings 1.7 million times. Rows with equal keys all go in, in row order,
// so that every tool sharing a name is found.
type rowTable struct {
	seed   maphash.Seed
	probes strtab.Probes
}

func newRowTable(n int) rowTable {
	return rowTable{seed: maphash.MakeSeed(), probes: strtab.NewProbes(n)}
}

// each calls yield with the rows whose slots lie on hash's probe sequence,
// in row order, until yield returns false.
func (t *rowTable) each(hash uint64, yield func(row int) bool) { t.probes.Each(hash, yield) }

// add puts row on hash's probe sequence, after any rows already on it.
func (t *rowTable) add(hash uint64, row int) { t.probes.Add(hash, row) }

func (t *rowTable) keyHash(server, name string) uint64 {
	return maphash.Comparable(t.seed, [2]string{server, name})
}

func (t *rowTable) nameHash(name string) uint64 { return maphash.String(t.seed, name) }
