package search

import (
	"strings"

	"github.com/toolsearch/toolsearch/pkg/catalog"
	"github.com/toolsearch/toolsearch/pkg/internal/pack"
)

// packBytes is about how many bytes of the texts a provider embeds share
// one allocation: about 250 of the generated catalogs' tools.
const packBytes = 128 << 10

// textPacker writes the texts a provider embeds end to end, each a part
// of a string of about packBytes. Made one by one, a text of about 500
// bytes shared its span with whatever else the analysis kept of that
// size; let go as its vector was written (or at once, for a text whose
// vector was kept), it left a hole that no later allocation filled and
// no collection could return. Packed, a run of texts goes back at once
// when the last of them is let go, which a provider's build does in the
// order it made them (BENCHMARKS.md, "The texts a provider embeds,
// packed"). A packer is one goroutine's.
type textPacker struct {
	p pack.Strings
}

func newTextPacker() *textPacker { return &textPacker{p: pack.Strings{Size: packBytes}} }

// text returns the Text whose Parts are parts.
func (p *textPacker) text(parts *[catalog.NumParts]string) string {
	return p.p.Write(catalog.TextLen(parts), func(b *strings.Builder) { catalog.WriteText(b, parts) })
}
