package analysis

import (
	"math"
	"slices"
	"strings"

	"github.com/toolsearch/toolsearch/pkg/internal/chunk"
)

// Corpus is a set of documents analysed once, for every ranker built from
// them: each document is a fixed number of segments (a tool's fields), and
// each segment the ids of its terms, in order, in one vocabulary. BM25 and
// the local embedder both read it, so a build splits, lower-cases and
// stems each text once, and a word repeated across a catalog is stemmed
// once per core, not once per occurrence. A Corpus is immutable.
type Corpus struct {
	vocab []string
	segs  int
	text  int        // Doc is a document's first text segments
	docs  [][]uint32 // docs[i]: document i's term ids, segment after segment
	ends  []uint32   // ends[i*segs+s]: where segment s of document i ends in docs[i]
}

// idBlock is how many term ids a block of a corpus's documents holds
// (256 KiB): large enough that its unused tail is small beside it.
const idBlock = 1 << 16

// Segments says how a corpus's documents are cut: into N segments each,
// the first Text of which make up the document's text (Doc; all when 0),
// those marked Raw holding terms analysed already (split on spaces and
// kept as they are, as learned query terms are).
type Segments struct {
	N    int
	Text int
	Raw  []bool
}

// Corpus analyses n documents of segs segments each on every core: fill
// writes document i's segments into seg (len segs), and is called once per
// document, from the core analysing it. Each segment's terms are Terms';
// only the vocabulary's order depends on how the work was split, never a
// document's terms.
func (a *Analyzer) Corpus(n int, layout Segments, fill func(doc int, seg []string)) *Corpus {
	return a.CorpusWith(n, layout, func() func(int, []string) { return fill })
}

// CorpusWith is Corpus with a fill of each core's own: newFill is called
// once on each goroutine the documents are analysed on, and the fill it
// returns is called there for each of them, in order, so that what it
// keeps (a buffer its results share) needs no lock.
func (a *Analyzer) CorpusWith(n int, layout Segments, newFill func() func(doc int, seg []string)) *Corpus {
	segs := layout.N
	c := &Corpus{segs: segs, text: layout.Text, docs: make([][]uint32, n), ends: make([]uint32, n*segs)}
	if c.text <= 0 || c.text > segs {
		c.text = segs
	}
	parts := make([]*interner, chunk.Count(n))
	chunk.Each(n, func(p, lo, hi int) {
		in := newInterner(a)
		parts[p] = in
		fill := newFill()
		// A document's ids are read into doc, then copied into a block
		// of about idBlock ids that holds many documents, each a window
		// of it. One slice grown by append for the whole chunk allocated
		// five times what it kept (each growth a quarter more, the old
		// array garbage): 117 MB for 20 at 10,000 tools of 4,500 bytes.
		var doc, block []uint32
		texts := make([]string, segs)
		for i := lo; i < hi; i++ {
			clear(texts)
			fill(i, texts)
			doc = doc[:0]
			for s, text := range texts {
				if s < len(layout.Raw) && layout.Raw[s] {
					doc = in.appendRaw(doc, text)
				} else {
					doc = in.appendTerms(doc, text)
				}
				c.ends[i*segs+s] = uint32(len(doc))
			}
			if cap(block)-len(block) < len(doc) {
				block = make([]uint32, 0, max(idBlock, len(doc)))
			}
			start := len(block)
			block = append(block, doc...)
			c.docs[i] = block[start:len(block):len(block)]
		}
	})
	// One vocabulary: each core's terms get their ids in it, and the cores
	// rewrite their blocks.
	global := make(map[string]uint32)
	remap := make([][]uint32, len(parts))
	for p, in := range parts {
		remap[p] = make([]uint32, len(in.terms))
		for local, t := range in.terms {
			id, ok := global[t]
			if !ok {
				// A term may be a window of a long field's text: copy it, so
				// that what outlives the build does not pin the text.
				t = strings.Clone(t)
				id = uint32(len(c.vocab))
				global[t] = id
				c.vocab = append(c.vocab, t)
			}
			remap[p][local] = id
		}
	}
	chunk.Each(n, func(p, lo, hi int) {
		for i := lo; i < hi; i++ {
			for j, id := range c.docs[i] {
				c.docs[i][j] = remap[p][id]
			}
		}
	})
	return c
}

// Len is the number of documents.
func (c *Corpus) Len() int { return len(c.docs) }

// Vocab is every term, indexed by id. The slice is shared: callers must
// not modify it.
func (c *Corpus) Vocab() []string { return c.vocab }

// Doc is document i's text as term ids: its text segments in order. The
// slice is shared: callers must not modify it.
func (c *Corpus) Doc(i int) []uint32 { return c.docs[i][:c.ends[i*c.segs+c.text-1]] }

// Segment is segment s of document i, as term ids. The slice is shared.
func (c *Corpus) Segment(i, s int) []uint32 {
	start := uint32(0)
	if s > 0 {
		start = c.ends[i*c.segs+s-1]
	}
	return c.docs[i][start:c.ends[i*c.segs+s]]
}

// Subset is the corpus of the documents rows, in that order, sharing this
// one's vocabulary and terms.
func (c *Corpus) Subset(rows []int) *Corpus {
	s := &Corpus{vocab: c.vocab, segs: c.segs, text: c.text, docs: make([][]uint32, len(rows)), ends: make([]uint32, len(rows)*c.segs)}
	for j, r := range rows {
		s.docs[j] = c.docs[r]
		copy(s.ends[j*c.segs:(j+1)*c.segs], c.ends[r*c.segs:(r+1)*c.segs])
	}
	return s
}

// Filter is c with segment seg of each document keeping only the terms
// keep accepts, in order; c itself when keep accepts them all, and else
// sharing every document it leaves whole.
func (c *Corpus) Filter(seg int, keep func(term uint32) bool) *Corpus {
	f := c
	for i := range c.docs {
		part := c.Segment(i, seg)
		if !slices.ContainsFunc(part, func(t uint32) bool { return !keep(t) }) {
			continue
		}
		if f == c {
			f = &Corpus{vocab: c.vocab, segs: c.segs, text: c.text, docs: slices.Clone(c.docs), ends: slices.Clone(c.ends)}
		}
		start := c.ends[i*c.segs+seg] - uint32(len(part))
		doc := append(make([]uint32, 0, len(c.docs[i])), c.docs[i][:start]...)
		for _, t := range part {
			if keep(t) {
				doc = append(doc, t)
			}
		}
		cut := uint32(len(part)) - (uint32(len(doc)) - start)
		doc = append(doc, c.docs[i][c.ends[i*c.segs+seg]:]...)
		for s := seg; s < c.segs; s++ {
			f.ends[i*c.segs+s] -= cut
		}
		f.docs[i] = doc
	}
	return f
}

// interner is one core's share of a Corpus: its terms, and the id of each
// word it has met (or skip for a stop word), so that a word is stemmed
// once.
type interner struct {
	a     *Analyzer
	terms []string
	ids   map[string]uint32 // term -> local id
	words map[string]uint32 // word as split -> local id of its term, or skip
}

const skip = math.MaxUint32

func newInterner(a *Analyzer) *interner {
	return &interner{a: a, ids: map[string]uint32{}, words: map[string]uint32{}}
}

// appendRaw appends the local ids of text's space-separated terms, as
// they are.
func (in *interner) appendRaw(ids []uint32, text string) []uint32 {
	for _, t := range strings.Fields(text) {
		id, ok := in.ids[t]
		if !ok {
			id = uint32(len(in.terms))
			in.terms = append(in.terms, t)
			in.ids[t] = id
		}
		ids = append(ids, id)
	}
	return ids
}

// appendTerms appends the local ids of text's terms (Terms) to ids.
func (in *interner) appendTerms(ids []uint32, text string) []uint32 {
	AppendWords(text, func(w string) {
		id, ok := in.words[w]
		if !ok {
			id = skip
			if !in.a.stop[w] {
				t := in.a.stem(w)
				if id, ok = in.ids[t]; !ok {
					id = uint32(len(in.terms))
					in.terms = append(in.terms, t)
					in.ids[t] = id
				}
			}
			in.words[w] = id
		}
		if id != skip {
			ids = append(ids, id)
		}
	})
	return ids
}
