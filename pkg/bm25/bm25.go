// Package bm25 ranks tools lexically with BM25F: Okapi BM25 over several
// weighted fields, so a query word found in a tool's name counts for more
// than the same word in a parameter description.
package bm25

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/toolsearch/toolsearch/pkg/analysis"
	"github.com/toolsearch/toolsearch/pkg/catalog"
	"github.com/toolsearch/toolsearch/pkg/index"
	"github.com/toolsearch/toolsearch/pkg/internal/chunk"
	"github.com/toolsearch/toolsearch/pkg/internal/hashtab"
	"github.com/toolsearch/toolsearch/pkg/internal/memo"
	"github.com/toolsearch/toolsearch/pkg/internal/strtab"
)

// Field indexes a document's text by where it came from.
type Field int

// The fields of a tool.
const (
	Name Field = iota
	Server
	Title
	Description
	Params
	Enums
	// Concepts holds the synonym concepts of every word above, so that a
	// query word meets its synonyms at a low weight.
	Concepts
	// Pairs holds each two neighbouring terms of every field above the
	// concepts, so that a query saying "current weather" favours the tool
	// that says so over one with "current" and "weather" far apart. New
	// fills it from the text fields.
	Pairs
	// Learned holds the terms of the queries that led callers to use the
	// tool (package learn: query-log document expansion), each as often
	// as its learned weight, rounded.
	Learned
	numFields
)

var fieldNames = [numFields]string{"name", "server", "title", "description", "params", "enums", "concepts", "pairs", "learned"}

func (f Field) String() string { return fieldNames[f] }

// Config holds BM25F's knobs. The zero value is not useful; start from
// DefaultConfig.
type Config struct {
	K1      float64
	B       float64
	Weights [numFields]float64
}

// DefaultConfig: k1 and b are the usual Okapi values. The weights make a
// name word worth three description words, and a parameter word about half
// of one, because names are chosen to say what a tool does and parameter
// text mostly says how.
var DefaultConfig = Config{
	K1:      1.2,
	B:       0.75,
	Weights: [numFields]float64{Name: 3, Server: 1.5, Title: 2, Description: 1, Params: 0.5, Enums: 0.4, Concepts: 0.3, Pairs: 1, Learned: LearnedWeight},
}

// PairWeight scales the idf of a query's neighbouring-term pairs: a pair is
// rare, so its full idf would outweigh the words it is made of. Chosen on
// the five shared sets with the Pairs field weight: the gain holds for
// pair weights from 0.1 to 0.5 and field weights from 0.5 to 2
// (evals/README.md).
const PairWeight = 0.3

// BroaderWeight scales the idf of a query term's hypernyms
// (analysis.Analyzer.HypernymLevels): "symptom" is weaker evidence for a query
// about a headache than "headache" would be. Chosen on the five shared
// sets: anything from 0.2 to 0.5 measured within half a point of 0.3
// (evals/README.md).
const BroaderWeight = 0.3

// NumberWeight scales the idf of a query term that is a number. A number in
// a request is nearly always a value for the tool to act on (an amount, an
// id, a date: "add 7 and 9", "order 81234"), and it meets tools whose
// names number their variants ("Rentals_2_Search") by chance. It still
// counts, for the numbers that do name things ("7zip"). Chosen on the
// five shared sets (0, 0.3, 0.5, 0.6 tried): 0.5 and 0.6 lose nothing on
// any set, and whichever four choose, the fifth gains or holds
// (evals/README.md).
const NumberWeight = 0.5

// number reports whether a term is digits only.
func number(t string) bool {
	for i := 0; i < len(t); i++ {
		if t[i] < '0' || t[i] > '9' {
			return false
		}
	}
	return t != ""
}

// LearnedWeight is the Learned field's weight: a word that callers who
// used the tool searched with, as much as half a description word. Chosen
// on the shared sets by replaying half of each as traffic and measuring
// the other half (evals/README.md, "Learning from use").
const LearnedWeight = 0.5

// DerivedWeight scales the idf of the derived forms of a query term that
// the catalog uses too: a query for the "multiplication" of two numbers
// meets a tool that says "multiply" even where another tool says
// "multiplication", but the word the query used still counts for more.
// Chosen on the five shared sets (0.2 to 1 tried): chosen on any four, the
// weight is 0.4 or 0.5 and the fifth gains or holds (evals/README.md).
const DerivedWeight = 0.4

// MaxDocs is the most documents an index holds: a posting's document is
// a uint32, and the count an int wherever the service is built.
const MaxDocs = math.MaxInt32

// Every catalog fits: this fails to compile otherwise.
var _ [MaxDocs - catalog.MaxTools]struct{}

// Index is an immutable inverted index over tools. It is safe for
// concurrent use.
//
// Every term, concept and pair has a list of postings, the documents that
// have it in row order; the lists lie end to end in one array (post),
// list k being [start[k], start[k+1]). A posting's impact is the term's whole
// BM25F weight in the document but for idf, the field-weighted,
// length-normalised term frequency saturated by k1 (tf/(k1+tf)), worked
// out once at build so that scoring a posting is one multiply-add.
type Index struct {
	p Config
	n int
	// terms numbers the terms (and concepts' tokens) some document has,
	// and termList is each one's list: a table without pointers for the
	// collector to follow, and about 20 bytes a term where a map took 40.
	// pairs are the keys of two neighbouring terms (pairKey of their
	// lists' numbers), sorted: pair i's list is firstPair+i. A sorted array
	// holds them in 8 bytes each, where a map took about 20 (16 MB at
	// 100,000 tools).
	terms     strtab.Table
	termList  []uint32
	pairs     []uint64
	firstPair uint32
	start     []uint32
	// A posting's code numbers its impact and the fields that hold the
	// term (for Matched): impacts[code] and fields[code]. They repeat (a
	// document's length and a term's counts in it take few values, and the
	// impact nearly fixes the fields): the 6.7 million postings of 100,000
	// generated tools have 4,684 distinct codes, seal-tools' 159,835 have
	// 5,777. A posting's document, shifted left by shift, leaves room
	// below it for 2^shift codes (32,768 at 100,000 tools, 4,096 at a
	// million), so one uint32 holds what six bytes did. Where the
	// codes outnumber that room, post holds the document alone (shift 0)
	// and code16 the code, or code32 where there are more than 65,536.
	post    []uint32
	shift   uint8
	code16  []uint16
	code32  []uint32
	impacts []float64
	fields  []uint16

	scratch sync.Pool
	cache   *memo.Memo[expansion] // by term
	typos   *memo.Memo[reading]   // a term no tool has, as Correct reads it
	// unaccented maps the term of an accented word some tool has, typed
	// without its accents, to the term ("impaye" to "impayées"), for
	// Correct. Only catalogs with accented words have any.
	unaccented map[string]string
}

// Layout says which segment of a corpus holds each text field of a tool
// (Name to Enums; the concepts and pairs fields are worked out from them),
// and which its learned terms (-1: none).
type Layout struct {
	Text    [Concepts]int
	Learned int
}

// ToolSegments cuts a tool into catalog.Fields.Parts, its text, then a
// segment of its learned terms, analysed already.
var ToolSegments = analysis.Segments{N: catalog.NumParts + 1, Text: catalog.NumParts, Raw: rawLearned()}

func rawLearned() []bool {
	raw := make([]bool, catalog.NumParts+1)
	raw[catalog.NumParts] = true
	return raw
}

// ToolLayout is where a corpus of catalog.Fields.Parts holds each field,
// the learned terms in a segment after the parts.
var ToolLayout = Layout{Text: [Concepts]int{Name: catalog.PartName, Server: catalog.PartServer, Title: catalog.PartTitle,
	Description: catalog.PartDescription, Params: catalog.PartParams, Enums: catalog.PartEnums}, Learned: catalog.NumParts}

// New indexes the documents of c, one per tool in row order, whose fields
// are the segments layout names. Every term of those segments is indexed,
// with its synonym concepts (field Concepts) and each two neighbouring
// terms of a field (field Pairs).
func New(c *analysis.Corpus, layout Layout, p Config) *Index {
	if c.Len() > MaxDocs {
		// catalog.MaxTools keeps every catalog under it.
		panic(fmt.Sprintf("bm25: %d documents, more than MaxDocs", c.Len()))
	}
	b := newBuilder(c, layout)
	ix := &Index{p: p, n: c.Len()}
	ix.cache = memo.New[expansion]()
	ix.typos = memo.New[reading]()
	norm := b.norms(p)
	ix.start, ix.pairs = b.count()
	ix.firstPair = uint32(b.singles)
	total := ix.start[len(ix.start)-1]
	ix.post = make([]uint32, total)
	local := make([]uint32, total)
	b.fill(ix, norm, local)
	b.codes(ix, local)
	// Concepts' tokens first: of a token some text also spells, the
	// table finds the first, and the concept's list is the one to keep.
	var strs []string
	for k, t := range b.conceptTerms {
		if id := uint32(len(b.vocab) + k); ix.start[id+1] > ix.start[id] {
			strs, ix.termList = append(strs, t), append(ix.termList, id)
		}
	}
	for id, t := range b.vocab {
		if ix.start[id+1] > ix.start[id] {
			strs, ix.termList = append(strs, t), append(ix.termList, uint32(id))
		}
	}
	ix.terms = strtab.New(strs)
	ix.unaccented = unaccented(b.vocab, ix)
	ix.scratch.New = func() any {
		s := make([]float32, ix.n)
		return &s
	}
	return ix
}

// unaccented is Index.unaccented for vocab: of two accented terms that
// read the same unaccented, the one more tools have, then the first; none
// for a spelling the index has as it is.
func unaccented(vocab []string, ix *Index) map[string]string {
	var m map[string]string
	for id, t := range vocab {
		if ix.start[id+1] == ix.start[id] {
			continue
		}
		u, ok := analysis.English.Unaccented(t)
		if !ok || ix.Has(u) {
			continue
		}
		if m == nil {
			m = map[string]string{}
		}
		if prev, seen := m[u]; seen {
			if k, _ := ix.termID(prev); ix.df(uint32(id)) <= ix.df(k) {
				continue
			}
		}
		m[u] = t
	}
	return m
}

// builder holds what New works out before the lists: each vocabulary
// term's concept tokens, as list numbers after the vocabulary's.
type builder struct {
	c      *analysis.Corpus
	layout Layout
	vocab  []string
	// conceptsOf[t] are the lists of term t's concept tokens; conceptTerms
	// the tokens, list len(vocab)+k being conceptTerms[k].
	conceptsOf   [][]uint32
	conceptTerms []string
	lens         [][numFields]uint16
	// From count, for fill.
	parts   []countPart
	singles int
}

func newBuilder(c *analysis.Corpus, layout Layout) *builder {
	b := &builder{c: c, layout: layout, vocab: c.Vocab(), conceptsOf: make([][]uint32, len(c.Vocab()))}
	// A concept's token shares its list with the same word in a text, as
	// it would if both were analysed from text; no real text has one.
	token := map[string]uint32{}
	for id, t := range b.vocab {
		if strings.HasPrefix(t, conceptPrefix) {
			token[t] = uint32(id)
		}
	}
	for id, t := range b.vocab {
		for _, cid := range analysis.English.Related(t) {
			// The concept's token as the documents' text would analyse it.
			for _, ct := range analysis.English.Terms(conceptToken(cid)) {
				k, ok := token[ct]
				if !ok {
					k = uint32(len(b.vocab) + len(b.conceptTerms))
					token[ct] = k
					b.conceptTerms = append(b.conceptTerms, ct)
				}
				b.conceptsOf[id] = append(b.conceptsOf[id], k)
			}
		}
	}
	return b
}

// norms is each document's length normalisation per field, from the
// fields' lengths in terms (as counted, at most MaxUint16) and their
// averages.
func (b *builder) norms(p Config) [][numFields]float64 {
	b.lens = make([][numFields]uint16, b.c.Len())
	chunk.Each(b.c.Len(), func(_, lo, hi int) {
		for d := lo; d < hi; d++ {
			var n [numFields]int
			for f := range Concepts {
				seg := b.c.Segment(d, b.layout.Text[f])
				n[f] = len(seg)
				n[Pairs] += max(len(seg)-1, 0)
				for _, t := range seg {
					n[Concepts] += len(b.conceptsOf[t])
				}
			}
			if b.layout.Learned >= 0 {
				n[Learned] = len(b.c.Segment(d, b.layout.Learned))
			}
			for f := range numFields {
				b.lens[d][f] = uint16(min(n[f], math.MaxUint16))
			}
		}
	})
	// A field's average length is over the documents that have it for
	// the learned terms, which only tools callers used have: over every
	// document, a catalog where one tool learned something would make its
	// one field many times the average, and worth next to nothing.
	var total, avgLen, docs [numFields]float64
	for _, l := range b.lens {
		for f := range total {
			total[f] += float64(l[f])
			if f != int(Learned) || l[f] > 0 {
				docs[f]++
			}
		}
	}
	for f := range total {
		if docs[f] > 0 {
			avgLen[f] = total[f] / docs[f]
		}
	}
	norm := make([][numFields]float64, len(b.lens))
	for d, l := range b.lens {
		for f := range numFields {
			norm[d][f] = 1
			if avgLen[f] > 0 {
				norm[d][f] = 1 - p.B + p.B*float64(l[f])/avgLen[f]
			}
		}
	}
	return norm
}

// conceptToken spells a concept id as one word that Terms keeps whole and
// no real text contains.
func conceptToken(id string) string { return conceptPrefix + conceptName(id) }

// conceptName is a concept id ("c:NAME") without its prefix.
func conceptName(id string) string { return strings.TrimPrefix(id, "c:") }

const conceptPrefix = "qqconcept"

// pairKey is the key of two neighbouring terms in a document's counts:
// above every single term's list number.
func pairKey(a, b uint32) uint64 { return uint64(a+1)<<32 | uint64(b) }

// count counts the documents of every list, each core its own share, and
// returns where each list starts (pairs numbered after the terms and
// concepts, in their keys' order) and the pairs' keys, sorted. The
// cores' counts stay in b for fill, which writes each core's postings
// after those of the cores before it. Each core sorts its own pairs'
// keys; they are merged in one pass, so no map of every pair is built,
// or read, by one core alone.
func (b *builder) count() ([]uint32, []uint64) {
	singles := len(b.vocab) + len(b.conceptTerms)
	parts := make([]countPart, chunk.Count(b.c.Len()))
	chunk.Each(b.c.Len(), func(p, lo, hi int) {
		cp := countPart{df: make([]uint32, singles), pairAt: hashtab.New[uint32](1 << 12)}
		var dc docCounts
		for d := lo; d < hi; d++ {
			for _, e := range b.countDoc(d, &dc) {
				if e.key < 1<<32 {
					cp.df[e.key]++
				} else {
					n, _ := cp.pairAt.At(e.key)
					*n++
				}
			}
		}
		cp.keys = make([]uint64, 0, cp.pairAt.Len())
		cp.pairAt.Each(func(k uint64, _ uint32) { cp.keys = append(cp.keys, k) })
		slices.Sort(cp.keys)
		cp.pairDF = make([]uint32, len(cp.keys))
		for i, k := range cp.keys {
			at, _ := cp.pairAt.At(k)
			cp.pairDF[i], *at = *at, uint32(i)
		}
		parts[p] = cp
	})
	pairKeys := mergePairs(parts, singles)
	lists := singles + len(pairKeys)
	start := make([]uint32, lists+1)
	// Each core's cursor into every list: the list's start plus what the
	// cores before it write there.
	for p := range parts {
		parts[p].at = make([]uint32, lists)
	}
	var at uint32
	for k := range singles {
		start[k] = at
		for p := range parts {
			parts[p].at[k] = at
			at += parts[p].df[k]
		}
	}
	next := make([]int, len(parts)) // each core's next pair, in key order
	for k := singles; k < lists; k++ {
		start[k] = at
		for p := range parts {
			cp := &parts[p]
			cp.at[k] = at
			if j := next[p]; j < len(cp.list) && cp.list[j] == uint32(k) {
				at += cp.pairDF[j]
				next[p]++
			}
		}
	}
	start[lists] = at
	b.parts, b.singles = parts, singles
	return start, pairKeys
}

// mergePairs merges the cores' sorted pair keys into one sorted list,
// numbering each core's pairs by their lists (singles onward).
func mergePairs(parts []countPart, singles int) []uint64 {
	n := 0
	for p := range parts {
		n += len(parts[p].keys)
		parts[p].list = make([]uint32, len(parts[p].keys))
	}
	keys := make([]uint64, 0, n)
	next := make([]int, len(parts))
	for {
		least, found := uint64(0), false
		for p := range parts {
			if j := next[p]; j < len(parts[p].keys) && (!found || parts[p].keys[j] < least) {
				least, found = parts[p].keys[j], true
			}
		}
		if !found {
			return keys
		}
		for p := range parts {
			if j := next[p]; j < len(parts[p].keys) && parts[p].keys[j] == least {
				parts[p].list[j] = uint32(singles + len(keys))
				next[p]++
			}
		}
		keys = append(keys, least)
	}
}

// countPart is one core's share of the counting: how many of its
// documents have each term or concept (df); its pairs' keys, sorted, with
// how many documents have each (pairDF) and its list (list), and where a
// key is among them (pairAt); then, for fill, where the core writes its
// next posting of each list.
type countPart struct {
	lo     int     // the core's first document
	codes  []combo // the distinct codes of its postings, as fill found them
	df     []uint32
	keys   []uint64
	pairDF []uint32
	list   []uint32
	pairAt *hashtab.Table[uint32]
	at     []uint32
}

// fill writes every posting's document, each core its own documents, at
// the cursors count left, and each posting's impact and fields as a code
// into its core's table of the distinct ones it found (countPart.codes),
// for codes to number over all.
func (b *builder) fill(ix *Index, norm [][numFields]float64, local []uint32) {
	p := ix.p
	chunk.Each(b.c.Len(), func(part, lo, hi int) {
		cp := &b.parts[part]
		cp.lo = lo
		at := cp.at
		// A small direct-mapped cache before the map: a document's
		// postings mostly share a few impacts (a term once in its
		// description), and the map's lookup was most of fill's time.
		seen := map[combo]uint32{}
		var recent [64]struct {
			bits   uint64
			fields uint16
			code   uint32
		}
		for i := range recent {
			recent[i].bits = math.MaxUint64 // a NaN's bits: no impact's
		}
		code := func(v float64, fields uint16) uint32 {
			bits := math.Float64bits(v)
			slot := &recent[((bits^uint64(fields))*0x9e3779b97f4a7c15)>>58]
			if slot.bits == bits && slot.fields == fields {
				return slot.code
			}
			k := combo{v, fields}
			c, ok := seen[k]
			if !ok {
				c = uint32(len(cp.codes))
				seen[k] = c
				cp.codes = append(cp.codes, k)
			}
			slot.bits, slot.fields, slot.code = bits, fields, c
			return c
		}
		var dc docCounts
		for d := lo; d < hi; d++ {
			for _, e := range b.countDoc(d, &dc) {
				list := uint32(e.key)
				if e.key >= 1<<32 {
					at, _ := cp.pairAt.Get(e.key)
					list = cp.list[at]
				}
				var tf float64
				var fields uint16
				for f := range numFields {
					if e.tf[f] == 0 {
						continue
					}
					fields |= 1 << f
					if p.Weights[f] != 0 {
						tf += p.Weights[f] * float64(e.tf[f]) / norm[d][f]
					}
				}
				i := at[list]
				at[list]++
				ix.post[i], local[i] = uint32(d), code(tf/(p.K1+tf), fields)
			}
		}
	})
}

// combo is what a posting's code stands for.
type combo struct {
	impact float64
	fields uint16
}

// maxPacked bounds how many codes postings hold below their documents'
// bits, and maxCode16 how many two-byte codes number; variables, so that
// tests can have an index hold them apart, in either width.
var maxPacked, maxCode16 = math.MaxInt, 1 << 16

// codes numbers the distinct codes fill found over all cores, in order,
// and writes each posting's number (fill's is local[i], in its core's
// table): below its document in ix.post where every number fits the bits
// the documents leave (ix.shift), else in code16, or in local's own array
// as code32.
func (b *builder) codes(ix *Index, local []uint32) {
	var all []combo
	for _, cp := range b.parts {
		all = append(all, cp.codes...)
	}
	order := func(a, b combo) int {
		return cmp.Or(cmp.Compare(a.impact, b.impact), cmp.Compare(a.fields, b.fields))
	}
	slices.SortFunc(all, order)
	all = slices.Compact(all)
	ix.impacts, ix.fields = make([]float64, len(all)), make([]uint16, len(all))
	for i, c := range all {
		ix.impacts[i], ix.fields[i] = c.impact, c.fields
	}
	remap := make([][]uint32, len(b.parts))
	for c, cp := range b.parts {
		remap[c] = make([]uint32, len(cp.codes))
		for j, v := range cp.codes {
			k, _ := slices.BinarySearchFunc(all, v, order)
			remap[c][j] = uint32(k)
		}
	}
	// A posting's core is the one whose documents hold its document.
	partOf := func(d uint32) int {
		return sort.Search(len(b.parts), func(c int) bool { return c+1 == len(b.parts) || b.parts[c+1].lo > int(d) })
	}
	post := ix.post
	switch shift := uint8(32 - bits.Len32(uint32(b.c.Len()))); {
	case len(all) <= min(1<<shift, maxPacked):
		ix.shift = shift
		chunk.Each(len(local), func(_, lo, hi int) {
			for i := lo; i < hi; i++ {
				post[i] = post[i]<<shift | remap[partOf(post[i])][local[i]]
			}
		})
	case len(all) <= maxCode16:
		ix.code16 = make([]uint16, len(local))
		chunk.Each(len(local), func(_, lo, hi int) {
			for i := lo; i < hi; i++ {
				ix.code16[i] = uint16(remap[partOf(post[i])][local[i]])
			}
		})
	default:
		chunk.Each(len(local), func(_, lo, hi int) {
			for i := lo; i < hi; i++ {
				local[i] = remap[partOf(post[i])][local[i]]
			}
		})
		ix.code32 = local
	}
}

// countEntry is one key's counts in a document, by field.
type countEntry struct {
	key uint64
	tf  [numFields]uint16
}

// docCounts is the working memory of countDoc: an open-addressing table of
// entries, reused document after document.
type docCounts struct {
	slots []int32 // entry index + 1; 0 is empty
	out   []countEntry
}

// countDoc counts each term, concept and pair of document d by field, in
// order of first appearance. The result lives in dc until its next use.
func (b *builder) countDoc(d int, dc *docCounts) []countEntry {
	n := 0
	for f := range Concepts {
		n += 2 * len(b.c.Segment(d, b.layout.Text[f]))
	}
	if b.layout.Learned >= 0 {
		n += len(b.c.Segment(d, b.layout.Learned))
	}
	size := 16
	for size < 2*n {
		size *= 2
	}
	if cap(dc.slots) < size {
		dc.slots = make([]int32, size)
	}
	slots := dc.slots[:size]
	clear(slots)
	mask := uint64(size - 1)
	out := dc.out[:0]
	count := func(key uint64, f Field) {
		h := (key * 0x9E3779B97F4A7C15) >> 32
		i := h & mask
		for slots[i] != 0 && out[slots[i]-1].key != key {
			i = (i + 1) & mask
		}
		if slots[i] == 0 {
			out = append(out, countEntry{key: key})
			slots[i] = int32(len(out))
		}
		if e := &out[slots[i]-1]; e.tf[f] < math.MaxUint16 {
			e.tf[f]++
		}
	}
	for f := range Concepts {
		seg := b.c.Segment(d, b.layout.Text[f])
		for i, t := range seg {
			count(uint64(t), f)
			if i > 0 {
				count(pairKey(seg[i-1], t), Pairs)
			}
		}
	}
	for f := range Concepts {
		for _, t := range b.c.Segment(d, b.layout.Text[f]) {
			for _, k := range b.conceptsOf[t] {
				count(uint64(k), Concepts)
			}
		}
	}
	if b.layout.Learned >= 0 {
		for _, t := range b.c.Segment(d, b.layout.Learned) {
			count(uint64(t), Learned)
		}
	}
	dc.out = out
	return out
}

// Has reports whether some document has term (analysed) in any field.
func (ix *Index) Has(term string) bool { return ix.terms.Number(term) >= 0 }

// termID is term's list, if some document has it.
func (ix *Index) termID(term string) (uint32, bool) {
	n := ix.terms.Number(term)
	if n < 0 {
		return 0, false
	}
	return ix.termList[n], true
}

// IDF is term's inverse document frequency here; 0 for a term no
// document has.
func (ix *Index) IDF(term string) float64 {
	k, ok := ix.termID(term)
	if !ok {
		return 0
	}
	return ix.idf(ix.df(k))
}

// df is how many documents list k holds.
func (ix *Index) df(k uint32) int { return int(ix.start[k+1] - ix.start[k]) }

// Len is the number of documents.
func (ix *Index) Len() int { return ix.n }

// idf is BM25's inverse document frequency in the Lucene form,
// ln(1 + (N-df+0.5)/(df+0.5)): positive however common the word, so a word
// in most tools still counts for a little, with no floor needed.
func (ix *Index) idf(df int) float64 {
	return math.Log(1 + (float64(ix.n)-float64(df)+0.5)/(float64(df)+0.5))
}

// Query is a query's distinct terms looked up in one index, so that a
// query scored, rated and explained is tokenised once. It is immutable.
type Query struct {
	ix    *Index
	terms []queryTerm
}

type queryTerm struct {
	// list is the term's postings list, or -1 for a term no document has
	// (it still counts in Fraction's best score).
	list int64
	idf  float64
	// from and name say where the term came from, for explanations
	// (Matched): the query's own term, named as itself, or a pair, named by
	// its two terms (name and second); a concept, named by its id; a
	// hypernym or a derived form of a query word. Labels are put together
	// only when explained, so a query pays nothing for them.
	from         termSource
	name, second string
	term         string // the term looked up; "" for a pair
	earlier      bool   // added With another query
	optional     bool   // and at less than full weight: counted in Fraction only where found
}

type termSource uint8

const (
	fromQuery termSource = iota
	fromConcept
	fromBroader
	fromDerived
)

// sourcePrefix is each termSource's prefix in an explanation's label.
var sourcePrefix = [...]string{fromQuery: "", fromConcept: "concept:", fromBroader: "broader:", fromDerived: "derived:"}

// Prepare looks up the query's terms, each once, then its synonym
// concepts, reading misspellings as fixes says (Correct's, for the whole
// query that query is a part of, such as a sentence ranked apart) and
// looking none up: a query pays for MaxCorrections lookups, however many
// parts it has, and each part reads as the whole did.
func (ix *Index) Prepare(query string, fixes []Fix) Query {
	terms := analysis.English.Terms(query)
	for i, t := range terms {
		for _, f := range fixes {
			if t == f.From {
				terms[i] = f.To
				break
			}
		}
	}
	return ix.PrepareTerms(terms)
}

// span is where list k's postings are: none for k < 0.
func (ix *Index) span(k int64) (lo, hi uint32) {
	if k < 0 {
		return 0, 0
	}
	return ix.start[k], ix.start[k+1]
}

// postings is list k's postings.
func (ix *Index) postings(k int64) []uint32 {
	lo, hi := ix.span(k)
	return ix.post[lo:hi:hi]
}

// code is posting i's code.
func (ix *Index) code(i uint32) uint32 {
	switch {
	case ix.code16 != nil:
		return uint32(ix.code16[i])
	case ix.code32 != nil:
		return ix.code32[i]
	}
	return ix.post[i] & (1<<ix.shift - 1)
}

// find is where row is in list k, if it is. Postings sort by document,
// whatever their codes.
func (ix *Index) find(k int64, row int) (uint32, bool) {
	posts := ix.postings(k)
	i, _ := slices.BinarySearch(posts, uint32(row)<<ix.shift)
	return ix.start[max(k, 0)] + uint32(i), i < len(posts) && int(posts[i]>>ix.shift) == row
}

// Search ranks the documents kept by keep (all when nil) against the query
// and returns the k best with a positive score, best first.
func (q Query) Search(ctx context.Context, k int, keep func(row int) bool) ([]index.Match, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ix := q.ix
	sp := ix.scratch.Get().(*[]float32)
	defer ix.scratch.Put(sp)
	scores := *sp
	if !q.ScoresInto(scores) {
		return []index.Match{}, nil
	}
	positive := func(row int) bool { return scores[row] > 0 && (keep == nil || keep(row)) }
	return index.TopK(scores, k, positive), nil
}

// What ScoresInto takes, on the machine of BENCHMARKS.md ("What a
// search costs"): a multiply-add a posting, and each document's score
// cleared and then read once more (to select, or to fuse).
const (
	nsPosting  = 1.2
	nsDocument = 1.0
)

// ScoreCost is about the CPU time of ScoresInto and a pass over its
// scores. Postings estimates how many documents it scores.
func (q Query) ScoreCost() time.Duration {
	if q.ix == nil {
		return 0
	}
	return time.Duration(float64(q.Postings())*nsPosting + float64(q.ix.n)*nsDocument)
}

// Postings is how many postings the query's terms have: at least as many
// as the documents that match it.
func (q Query) Postings() int {
	n := 0
	for _, t := range q.terms {
		if t.list >= 0 {
			n += int(q.ix.start[t.list+1] - q.ix.start[t.list])
		}
	}
	return n
}

// ScoresInto writes every document's score into dst (Len elements; 0 for
// no match) and reports whether the query had any term.
func (q Query) ScoresInto(dst []float32) bool {
	dst = dst[:q.ix.n]
	clear(dst)
	ix := q.ix
	for _, t := range q.terms {
		lo, hi := ix.span(t.list)
		switch {
		case ix.code16 != nil:
			addScores(dst, ix.post[lo:hi], ix.code16[lo:hi], ix.impacts, t.idf)
		case ix.code32 != nil:
			addScores(dst, ix.post[lo:hi], ix.code32[lo:hi], ix.impacts, t.idf)
		default:
			addPacked(dst, ix.post[lo:hi], ix.shift, ix.impacts, t.idf)
		}
	}
	return len(q.terms) > 0
}

// addScores adds each posting's score for a term of weight idf to its
// document's. Inlined into ScoresInto, its loop reloaded a spilled
// register every posting: 3.0 against 2.4 us in BenchmarkScores.
//
//go:noinline
func addScores[C uint16 | uint32](dst []float32, posts []uint32, codes []C, impacts []float64, idf float64) {
	codes = codes[:len(posts)]
	for i, p := range posts {
		dst[p] += float32(idf * impacts[codes[i]])
	}
}

// addPacked is addScores for postings that hold their codes.
//
//go:noinline
func addPacked(dst []float32, posts []uint32, shift uint8, impacts []float64, idf float64) {
	mask := uint32(1)<<shift - 1
	for _, p := range posts {
		dst[p>>shift] += float32(idf * impacts[p&mask])
	}
}

// Fraction is row's BM25 score for the query as a fraction of the most any
// document could score (every query term matched without limit), in
// [0,1]. Unlike the raw score, it does not grow with the query's length,
// so it can be compared across queries. An optional term (With's) the
// document lacks is left out of both.
func (q Query) Fraction(row int) float32 {
	var got, best float64
	for _, t := range q.terms {
		i, ok := q.ix.find(t.list, row)
		if t.optional && !ok {
			continue
		}
		best += t.idf
		if ok {
			got += t.idf * q.ix.impacts[q.ix.code(i)]
		}
	}
	if best == 0 {
		return 0
	}
	return float32(got / best)
}

// Matched returns the query terms found in document row, and in which
// fields, for explaining a ranking. A synonym concept reads "concept:NAME",
// a hypernym of a query word "broader:TERM", a derived form of a query word
// "derived:TERM", and two neighbouring terms
// found side by side read as the two, in field "pairs". A term added With
// another query (a conversation's earlier turns) reads after "earlier:".
func (q Query) Matched(row int) map[string][]string {
	out := map[string][]string{}
	for _, t := range q.terms {
		label := sourcePrefix[t.from] + t.name
		if t.second != "" {
			label += " " + t.second
		}
		if t.earlier {
			label = "earlier:" + label
		}
		if i, ok := q.ix.find(t.list, row); ok {
			fields := q.ix.fields[q.ix.code(i)]
			for f := range numFields {
				if fields&(1<<f) != 0 {
					out[label] = append(out[label], Field(f).String())
				}
			}
		}
	}
	return out
}
