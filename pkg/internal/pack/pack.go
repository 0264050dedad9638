// Package pack writes many small strings end to end into a few large
// ones, so that strings made and let go together are one allocation: no
// allocation's rounding each, and no holes among live objects when they
// go (BENCHMARKS.md, "The texts a provider embeds, packed").
package pack

import "strings"

// Strings packs strings end to end into shared strings of at least Size
// bytes. A strings.Builder only appends, so the bytes under a string
// given out are never written again; one that does not fit starts a new
// shared string, where growing this one would copy those before it. Not
// for concurrent use.
type Strings struct {
	Size int
	b    strings.Builder
}

// Write returns the n bytes write writes to b, a part of a shared string.
func (p *Strings) Write(n int, write func(b *strings.Builder)) string {
	if p.b.Cap()-p.b.Len() < n {
		p.b = strings.Builder{}
		p.b.Grow(max(p.Size, n))
	}
	start := p.b.Len()
	write(&p.b)
	return p.b.String()[start:]
}
