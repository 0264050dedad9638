package catalog

import (
	"slices"
	"strings"

	"github.com/toolsearch/toolsearch/pkg/internal/edit"
)

// nearScan bounds the names NearName reads on each side: a name that
// shares its first or last few letters with thousands of tools gets a
// suggestion from the first of them, or none, at a bounded cost.
const nearScan = 1024

// NearRef is how a reference would name the tool that ref nearly names
// (NearName: its case or one typing error apart), or "": the bare name
// where it names that tool alone, else server/name. In a ref with a "/",
// the part after the last one is read as the name.
func (c *Catalog) NearRef(ref string) string {
	row, ok := c.NearName(ref)
	if !ok {
		if at := strings.LastIndexByte(ref, '/'); at >= 0 {
			row, ok = c.NearName(ref[at+1:])
		}
	}
	if !ok {
		return ""
	}
	t := c.Tool(row)
	if r, err := c.Resolve(t.Name); err == nil && r == row {
		return t.Name
	}
	return t.ID()
}

// NearName is a row whose tool's name is name nearly: the same but for
// ASCII case, else one typing error away (edit.One), ASCII case aside; for a
// name of at least four bytes, as the suggestions for JSON keys are. It
// reads only the names that share name's first or last letters: one
// typing error leaves at least (len-2)/2 of them at one end or the other,
// and the names are kept sorted both ways (built on first use, two row
// numbers a tool).
func (c *Catalog) NearName(name string) (int, bool) {
	if len(name) < 4 || len(name) > MaxNameBytes+1 {
		return -1, false
	}
	c.nearOnce.Do(func() {
		for dir := range c.near {
			rows := make([]int32, len(c.tools))
			for i := range rows {
				rows[i] = int32(i)
			}
			slices.SortFunc(rows, func(x, y int32) int { return compareFolded(c.tools[x].Name, c.tools[y].Name, dir == 1) })
			c.near[dir] = rows
		}
	})
	low := foldASCII(name)
	half := (len(low) - 2) / 2
	best := -1
	for dir, rows := range c.near {
		back := dir == 1
		e := ending(low, half, back)
		// The names sharing e, read in this direction, are a run from the
		// first at or after it.
		i, _ := slices.BinarySearchFunc(rows, e, func(r int32, e string) int {
			return compareFolded(ending(c.tools[r].Name, len(e), back), e, back)
		})
		for n := 0; i < len(rows) && n < nearScan; i, n = i+1, n+1 {
			t := c.tools[rows[i]].Name
			if compareFolded(ending(t, len(e), back), e, back) != 0 {
				break
			}
			lt := foldASCII(t)
			switch {
			case lt == low:
				return int(rows[i]), true
			case best < 0 && edit.One(low, lt):
				best = int(rows[i])
			}
		}
	}
	return best, best >= 0
}

// ending is the first n bytes of s, or its last n when back (all of s
// when shorter).
func ending(s string, n int, back bool) string {
	n = min(n, len(s))
	if back {
		return s[len(s)-n:]
	}
	return s[:n]
}

// foldASCII is s with ASCII capitals lower-cased and every other byte as
// it is: the order the near index is sorted in, whose byte offsets a
// Unicode fold would move.
func foldASCII(s string) string {
	if !strings.ContainsFunc(s, func(r rune) bool { return 'A' <= r && r <= 'Z' }) {
		return s
	}
	b := []byte(s)
	for i, c := range b {
		b[i] = lowerASCII(c)
	}
	return string(b)
}

// compareFolded orders a and b lower-cased (ASCII), read from their
// start, or from their end when back, without copying them.
func compareFolded(a, b string, back bool) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		x, y := a[i], b[i]
		if back {
			x, y = a[len(a)-1-i], b[len(b)-1-i]
		}
		if x, y = lowerASCII(x), lowerASCII(y); x != y {
			return int(x) - int(y)
		}
	}
	return len(a) - len(b)
}

func lowerASCII(b byte) byte {
	if 'A' <= b && b <= 'Z' {
		return b + 'a' - 'A'
	}
	return b
}
