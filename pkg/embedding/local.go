package embedding

import (
	"context"
	"math"
	mathbits "math/bits"
	"slices"
	"sync"

	"github.com/toolsearch/toolsearch/pkg/analysis"
	"github.com/toolsearch/toolsearch/pkg/internal/chunk"
	"github.com/toolsearch/toolsearch/pkg/internal/hashtab"
	"github.com/toolsearch/toolsearch/pkg/internal/memo"
	"github.com/toolsearch/toolsearch/pkg/internal/prefault"
)

// DefaultLocalDimensions is the width of the local embedder's hashed space.
// Wide enough that the shared real catalogs (a few thousand tools) rarely
// collide, small enough that 10,000 tools fit in 40 MB.
const DefaultLocalDimensions = 1024

// LocalModel names the local embedder's feature scheme; it changes whenever
// the features do, so stored snapshots built with an older scheme are
// rebuilt instead of reused.
const LocalModel = "hashed-tfidf-v6"

// Local is an offline, deterministic embedder: sublinear TF-IDF over stemmed
// words, word pairs and character n-grams, hashed into a fixed number of
// signed buckets. It needs no network and no model files, so the service and
// its tests run anywhere. Fit it on the catalog so that rare words weigh more
// than words every tool shares. A Local is immutable and safe for concurrent
// use.
type Local struct {
	dim int
	idf *hashtab.Table[float32] // feature hash -> inverse document frequency; nil before Fit
	// unseen is the IDF of a feature no fitted document has. Such a feature
	// can only match through a hash collision, so it mostly adds length.
	unseen float32
	terms  *memo.Memo[termEntry] // query terms' features; nil before Fit
}

// NewLocal returns an unfitted local embedder with dim buckets
// (DefaultLocalDimensions when dim is 0).
func NewLocal(dim int) *Local {
	if dim <= 0 {
		dim = DefaultLocalDimensions
	}
	return &Local{dim: dim, unseen: 1}
}

// Info describes the embedder.
func (l *Local) Info() Info {
	return Info{Provider: "local", Model: LocalModel, Dimensions: l.dim}
}

// Feature kinds and their weights: a shared word says more than a shared
// word pair's worth of n-grams, but n-grams rescue morphology the stemmer
// misses ("authenticate" and "authentication").
const (
	kindWord    = 'w'
	kindPair    = 'p'
	kindGram    = 'g'
	kindConcept = 'c'
	wordWeight  = 1.0
	// conceptWeight: a shared concept is weaker evidence than a shared word.
	conceptWeight = 0.5
	pairWeight    = 0.5
	gramWeight    = 0.35
)

// feature is one hashed feature of a text and its weight, sublinear term
// frequency folded in. Features of a corpus's vocabulary also carry a
// dense id (fid, from 1; 0 for none), so that a build reads their counts
// and weights from arrays rather than a table of every feature.
type feature struct {
	hash   uint64
	weight float32
	fid    uint32
}

// scratch is the per-call working memory of features, pooled so that
// embedding a query allocates nothing but its vector.
type scratch struct {
	raw    []feature // one per occurrence, in text order
	out    []feature
	slots  []slot
	order  []int32
	padded []byte
	// For EmbedSparseTerms: a dense vector kept all zero between uses, and the
	// buckets written in this use.
	dense   []float32
	touched []uint64 // a bit a bucket
	buckets []int32
	byID    []float32 // a query's feature weights, by its numbering (queryFeatures)
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// termFeatures returns the weighted features of text split into analysed
// terms, one per distinct hash, in the order of first occurrence (so a
// vector's sums run in the same order every time). Each term gives its
// word and concept features, its pair with the term before it, then its
// character n-grams. The slice lives in sc and is valid until sc is
// reused. Hashing is FNV-1a written out over the pieces of a feature, so a
// feature costs no allocation; this runs for every query.
func termFeatures(terms []string, sc *scratch) []feature {
	raw := sc.raw[:0]
	for i, t := range terms {
		raw = appendHead(raw, t)
		if i > 0 {
			raw = append(raw, feature{hash: pairHash(pairPrefix(terms[i-1]), t), weight: pairWeight})
		}
		raw = appendGrams(raw, t, sc)
	}
	sc.raw = raw
	return aggregate(sc)
}

// appendHead appends a term's own features that come before its pair:
// the word, and its concepts.
func appendHead(raw []feature, t string) []feature {
	raw = append(raw, feature{hash: fnv(fnvKind(kindWord), t), weight: wordWeight})
	for _, c := range analysis.English.Related(t) {
		raw = append(raw, feature{hash: fnv(fnvKind(kindConcept), c), weight: conceptWeight})
	}
	return raw
}

// pairPrefix is the hash of a pair's first term and the space after it;
// pairHash finishes it with the second.
func pairPrefix(a string) uint64 { return (fnv(fnvKind(kindPair), a) ^ ' ') * fnvPrime }

func pairHash(prefix uint64, b string) uint64 { return fnv(prefix, b) }

// appendGrams appends the character 3- and 4-grams of a term longer than
// three letters, padded with < and >.
func appendGrams(raw []feature, t string, sc *scratch) []feature {
	if len(t) <= 3 {
		return raw
	}
	padded := append(append(append(sc.padded[:0], '<'), t...), '>')
	sc.padded = padded
	for n := 3; n <= 4; n++ {
		w := gramWeight / float32(len(padded)-n+1)
		for j := 0; j+n <= len(padded); j++ {
			raw = append(raw, feature{hash: fnvBytes(fnvKind(kindGram), padded[j:j+n]), weight: w})
		}
	}
	return raw
}

// aggregate folds sc.raw, one feature per occurrence, into one feature per
// distinct hash, in the order of first occurrence, weighted by sublinear
// term frequency. The result lives in sc.
func aggregate(sc *scratch) []feature {
	raw := sc.raw
	// Count each hash's occurrences in an open-addressing table; the last
	// occurrence's weight wins, as it always has. Features come out in
	// the order of their first occurrence.
	size := 16
	for size < 2*len(raw) {
		size *= 2
	}
	if cap(sc.slots) < size {
		sc.slots = make([]slot, size)
	}
	slots := sc.slots[:size]
	clear(slots)
	mask := uint64(size - 1)
	order := sc.order[:0]
	for _, f := range raw {
		i := f.hash & mask
		for slots[i].count != 0 && slots[i].hash != f.hash {
			i = (i + 1) & mask
		}
		sl := &slots[i]
		if sl.count == 0 {
			sl.hash, sl.fid = f.hash, f.fid
			order = append(order, int32(i))
		}
		sl.count++
		sl.weight = f.weight
	}
	sc.order = order
	out := sc.out[:0]
	for _, i := range order {
		sl := slots[i]
		w := sl.weight
		if sl.count > 1 { // 1+ln(1) is 1: most features occur once
			w *= float32(1 + math.Log(float64(sl.count)))
		}
		out = append(out, feature{hash: sl.hash, weight: w, fid: sl.fid})
	}
	sc.out = out
	return out
}

// vocabFeatures are the features of each term of a corpus's vocabulary,
// worked out once per term rather than once per occurrence: feats holds,
// term after term, its head (appendHead) then its grams (appendGrams);
// term t's head is feats[at[t]:mid[t]] and its grams feats[mid[t]:at[t+1]].
// Each distinct hash among them has a dense id (hashes[fid] is its hash;
// hashes[0] is unused), which a pair that happens to hash alike shares.
type vocabFeatures struct {
	vocab   []string
	feats   []feature
	at, mid []uint32
	prefix  []uint64 // pairPrefix of each term
	ids     *hashtab.Table[uint32]
	hashes  []uint64
	// pairsApart: fitting counted the corpus's features and found no
	// pair of it that hashes as a vocabulary feature (one that did would
	// be counted with that feature). A 64-bit hash makes such a pair all
	// but impossible; knowing there is none, embedding need not look
	// pairs up. False until fitting says so.
	pairsApart bool
}

func newVocabFeatures(vocab []string) *vocabFeatures {
	// A term has its word, its grams (2×len-1 for a long one) and a
	// concept or two: sized once, the features are not copied as they grow,
	// and made resident at once (prefault): at 100,000 tools they are 40
	// MB, written on one core, and faulting them in a page at a time was a
	// third of this function's time in a fresh process.
	n := 0
	for _, t := range vocab {
		n += 2*len(t) + 2
	}
	vf := &vocabFeatures{vocab: vocab, feats: prefault.Make[feature](n)[:0], at: make([]uint32, len(vocab)+1), mid: make([]uint32, len(vocab)),
		prefix: make([]uint64, len(vocab)), ids: hashtab.New[uint32](len(vocab)), hashes: []uint64{0}}
	sc := new(scratch)
	for id, t := range vocab {
		vf.at[id] = uint32(len(vf.feats))
		vf.feats = appendHead(vf.feats, t)
		vf.mid[id] = uint32(len(vf.feats))
		vf.feats = appendGrams(vf.feats, t, sc)
		vf.prefix[id] = pairPrefix(t)
	}
	vf.at[len(vocab)] = uint32(len(vf.feats))
	for j := range vf.feats {
		fid, added := vf.ids.At(vf.feats[j].hash)
		if added {
			*fid = uint32(len(vf.hashes))
			vf.hashes = append(vf.hashes, vf.feats[j].hash)
		}
		vf.feats[j].fid = *fid
	}
	return vf
}

// countDoc counts, in df, the vocabulary features document doc has (its
// number being mark: seen holds, for each feature, the mark of the last
// document that counted it), and appends to pairs, once each, the hashes
// of its pairs that are not vocabulary features. It is the set of
// features termFeatures gives its text, without their weights or order,
// which fitting needs only to count.
func (vf *vocabFeatures) countDoc(doc []uint32, mark int32, seen []int32, df []float32, pairs []uint64) (_ []uint64, pairIDs bool) {
	count := func(fid uint32) {
		if seen[fid] != mark {
			seen[fid] = mark
			df[fid]++
		}
	}
	for i, t := range doc {
		for _, f := range vf.feats[vf.at[t]:vf.at[t+1]] {
			count(f.fid)
		}
		if i > 0 {
			h := pairHash(vf.prefix[doc[i-1]], vf.vocab[t])
			if fid, _ := vf.ids.Get(h); fid != 0 {
				count(fid)
				pairIDs = true
			} else {
				pairs = append(pairs, h)
			}
		}
	}
	slices.Sort(pairs)
	return slices.Compact(pairs), pairIDs
}

// slot is one entry of features' counting table; count 0 marks it empty.
type slot struct {
	hash   uint64
	count  int32
	weight float32
	fid    uint32
}

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func fnvKind(kind byte) uint64 { return (fnvOffset ^ uint64(kind)) * fnvPrime }

func fnv(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h = (h ^ uint64(s[i])) * fnvPrime
	}
	return h
}

func fnvBytes(h uint64, b []byte) uint64 {
	for _, c := range b {
		h = (h ^ uint64(c)) * fnvPrime
	}
	return h
}

// Fit returns a copy of l whose IDF weights come from docs, the texts the
// index will hold. Queries must be embedded by the fitted copy. The copy
// is returned as an Embedder so that consumers can ask for fitting through
// an interface of their own instead of naming Local.
func (l *Local) Fit(docs []string) Embedder { return l.FitCorpus(corpusOf(docs)) }

// corpusOf is texts analysed as one-part documents.
func corpusOf(texts []string) *analysis.Corpus {
	return analysis.English.Corpus(len(texts), analysis.Segments{N: 1}, func(i int, seg []string) { seg[0] = texts[i] })
}

// FitCorpus is Fit for texts analysed already, each document of c being
// one text's terms in order: a build analyses each tool's text once, for
// BM25 and the local embedder alike.
func (l *Local) FitCorpus(c *analysis.Corpus) Embedder { return l.fit(c, newVocabFeatures(c.Vocab())) }

// FitEmbedCorpus is FitCorpus, then the fitted embedder's EmbedCorpus,
// working out the vocabulary's features once for both.
func (l *Local) FitEmbedCorpus(ctx context.Context, c *analysis.Corpus, set Rows) (Embedder, error) {
	vf := newVocabFeatures(c.Vocab())
	f := l.fit(c, vf)
	return f, f.embedCorpus(ctx, c, vf, set)
}

// fit is FitCorpus with c's vocabulary features worked out.
func (l *Local) fit(c *analysis.Corpus, vf *vocabFeatures) *Local {
	// Each core counts its share of the documents; the counts are summed,
	// so the weights are the same however the work was split. A
	// vocabulary feature is counted by its id, a pair by its hash.
	type counts struct {
		df      []float32
		pairs   *hashtab.Table[float32]
		pairIDs bool
	}
	parts := make([]counts, chunk.Count(c.Len()))
	chunk.Each(c.Len(), func(p, lo, hi int) {
		cs := counts{df: make([]float32, len(vf.hashes)), pairs: hashtab.New[float32](1 << 12)}
		seen := make([]int32, len(vf.hashes))
		var pairs []uint64
		for i := lo; i < hi; i++ {
			var ids bool
			pairs, ids = vf.countDoc(c.Doc(i), int32(i+1), seen, cs.df, pairs[:0])
			cs.pairIDs = cs.pairIDs || ids
			for _, h := range pairs {
				v, _ := cs.pairs.At(h)
				*v++
			}
		}
		parts[p] = cs
	})
	df := parts[0].df
	most := parts[0].pairs.Len()
	pairIDs := parts[0].pairIDs
	for _, p := range parts[1:] {
		for fid, n := range p.df {
			df[fid] += n
		}
		most = max(most, p.pairs.Len())
		pairIDs = pairIDs || p.pairIDs
	}
	vf.pairsApart = !pairIDs
	// The cores' pair counts are summed straight into the weights' table,
	// which then turns each count into its weight: a pair is never a
	// vocabulary feature, so every entry is a pair's until the
	// vocabulary's weights join them. (Summing into the first core's
	// table, then copying the sums into this one, made a table of the
	// catalog's pairs twice, on one core.) It grows to the size a table
	// made for all of them at once would have.
	idf := hashtab.New[float32](len(vf.hashes) + most)
	for _, p := range parts {
		p.pairs.Each(func(h uint64, n float32) {
			v, _ := idf.At(h)
			*v += n
		})
	}
	n := float64(c.Len())
	idfOf := func(df float32) float32 { return float32(math.Log((n+1)/(float64(df)+1)) + 1) }
	idf.Update(idfOf)
	for fid, h := range vf.hashes[1:] {
		if d := df[fid+1]; d > 0 { // a view's documents may lack some of the vocabulary
			v, _ := idf.At(h)
			*v = idfOf(d)
		}
	}
	return &Local{dim: l.dim, idf: idf, unseen: float32(math.Log(n+1) + 1), terms: memo.New[termEntry]()}
}

// Embed returns one unnormalised vector per text. It never fails unless ctx
// is done.
func (l *Local) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	block := make([]float32, len(texts)*l.dim)
	err := l.EmbedCorpus(ctx, corpusOf(texts), func(first int, rows []float32, _ []uint64) { copy(block[first*l.dim:], rows) })
	if err != nil {
		return nil, err
	}
	out := make([][]float32, len(texts))
	for i := range out {
		out[i] = block[i*l.dim : (i+1)*l.dim : (i+1)*l.dim]
	}
	return out, nil
}

// embedBatch is how many documents a core embeds before handing them on.
const embedBatch = 256

// Rows takes a block of embedded rows, first, first+1, …, row-major and
// unnormalised, with the buckets each row's features touched: a bit each,
// in RowWords(dim) words a row, a superset of its nonzeros (features that
// share a bucket may cancel). A row's nonzeros are a few hundred of its
// thousand buckets, so columns built from the bits read only those. It
// may be called from several goroutines at once, for different rows; rows
// and touched are reused once it returns.
type Rows func(first int, rows []float32, touched []uint64)

// RowWords is the words of a row's touched bits in Rows, at width dim.
func RowWords(dim int) int { return (dim + 63) / 64 }

// EmbedCorpus is Embed for texts analysed already (FitCorpus), on every
// core: each core embeds its documents embedBatch at a time into a block
// of its own and hands each block to set with the number of its first
// document. set writes the rows where the index keeps them (a block it
// adopts, or columns).
func (l *Local) EmbedCorpus(ctx context.Context, c *analysis.Corpus, set Rows) error {
	return l.embedCorpus(ctx, c, newVocabFeatures(c.Vocab()), set)
}

func (l *Local) embedCorpus(ctx context.Context, c *analysis.Corpus, vf *vocabFeatures, set Rows) error {
	dv := newDocVectors(l, vf, !vf.pairsApart)
	chunk.Each(c.Len(), func(_, lo, hi int) {
		work := dv.newWork()
		words := RowWords(l.dim)
		rows, bits := make([]float32, embedBatch*l.dim), make([]uint64, embedBatch*words)
		for first := lo; first < hi; first += embedBatch {
			if ctx.Err() != nil {
				return
			}
			n := min(embedBatch, hi-first)
			block, touched := rows[:n*l.dim], bits[:n*words]
			clear(block)
			clear(touched)
			for i := range n {
				dv.embed(c.Doc(first+i), work, block[i*l.dim:(i+1)*l.dim], touched[i*words:(i+1)*words])
			}
			set(first, block, touched)
		}
	})
	return ctx.Err()
}

// weight is a feature's idf: 1 before fitting, unseen for a feature no
// fitted document has.
func (l *Local) weight(hash uint64) float32 {
	if l.idf == nil {
		return 1
	}
	if x, ok := l.idf.Get(hash); ok {
		return x
	}
	return l.unseen
}

// bucket is the bucket of a feature's hash: its low bits pick it, and a
// high bit its sign (accumulate), so that colliding features cancel on
// average instead of piling up. The default width is a power of two,
// where a mask is the remainder without a division, which a build did
// for every feature of every tool.
func (l *Local) bucket(hash uint64) int {
	if l.dim&(l.dim-1) == 0 {
		return int(hash & uint64(l.dim-1))
	}
	return int(hash % uint64(l.dim))
}

// accumulate adds each feature's weighted IDF into its bucket of v and, if
// touched is not nil, marks the bucket. byID, if not nil, holds the
// weights of features with an id.
func (l *Local) accumulate(feats []feature, v []float32, touched []uint64, byID []float32) {
	for _, f := range feats {
		k, w := f.hash, f.weight
		var idf float32
		if f.fid != 0 && byID != nil {
			idf = byID[f.fid]
		} else {
			idf = l.weight(k)
		}
		b := l.bucket(k)
		if k>>63 == 1 {
			v[b] -= w * idf
		} else {
			v[b] += w * idf
		}
		if touched != nil {
			touched[b/64] |= 1 << (b % 64)
		}
	}
}

// EmbedSparseTerms returns the vector Embed would for text split into
// analysed terms (the caller needs the terms too, for lexical ranking),
// unnormalised, as its written buckets in bucket order (idx) and their
// values (val): a query has tens of features among a thousand buckets, so
// ranking needs only those columns. Each value is bit for bit Embed's.
func (l *Local) EmbedSparseTerms(terms []string) (idx []int32, val []float32) {
	return l.AppendSparseTerms(nil, nil, terms)
}

// AppendSparseTerms is EmbedSparseTerms appending to idx and val, for a
// caller that reuses them.
func (l *Local) AppendSparseTerms(idx []int32, val []float32, terms []string) ([]int32, []float32) {
	sc := scratchPool.Get().(*scratch)
	defer scratchPool.Put(sc)
	if len(sc.dense) != l.dim {
		sc.dense, sc.touched = make([]float32, l.dim), make([]uint64, (l.dim+63)/64)
	}
	var feats []feature
	var byID []float32
	if l.terms != nil {
		feats, byID = l.queryFeatures(terms, sc)
	} else {
		feats = termFeatures(terms, sc)
	}
	l.accumulate(feats, sc.dense, sc.touched, byID)
	// The marks, a bit a bucket, yield the buckets in order: sixteen words
	// at the default width, cheaper than sorting them.
	buckets := sc.buckets[:0]
	for w, bits := range sc.touched {
		for bits != 0 {
			buckets = append(buckets, int32(w*64+mathbits.TrailingZeros64(bits)))
			bits &= bits - 1
		}
		sc.touched[w] = 0 // clean for the next use
	}
	sc.buckets = buckets
	idx, val = slices.Grow(idx, len(buckets)), slices.Grow(val, len(buckets))
	for _, b := range buckets {
		idx, val = append(idx, b), append(val, sc.dense[b])
		sc.dense[b] = 0
	}
	return idx, val
}

// termEntry is a term's features: head (appendHead) then grams
// (appendGrams), split at mid, and each one's weight (Local.weight).
type termEntry struct {
	feats  []feature
	idf    []float32
	mid    int
	prefix uint64 // pairPrefix(term)
}

// entry returns term t's features and their weights: from the memo, which
// keeps those of the terms queries used, so that a query hashes and looks
// up only its pairs. The memo is the fitted embedder's, as the weights are.
func (l *Local) entry(t string, sc *scratch) *termEntry {
	if e := l.terms.Get(t); e != nil {
		return e
	}
	e := termEntry{prefix: pairPrefix(t)}
	e.feats = appendHead(nil, t)
	e.mid = len(e.feats)
	e.feats = appendGrams(e.feats, t, sc)
	e.idf = make([]float32, len(e.feats))
	for i, f := range e.feats {
		e.idf[i] = l.weight(f.hash)
	}
	return l.terms.Put(t, e)
}

// queryFeatures is termFeatures with each term's entry from the memo,
// numbered in this query's order: their weights are byID[fid] (sc.byID,
// which accumulate reads), and a pair, with no id, is looked up.
func (l *Local) queryFeatures(terms []string, sc *scratch) (feats []feature, byID []float32) {
	raw := sc.raw[:0]
	byID = append(sc.byID[:0], 0) // id 0: none
	add := func(fs []feature, idf []float32) {
		for i, f := range fs {
			f.fid = uint32(len(byID))
			byID = append(byID, idf[i])
			raw = append(raw, f)
		}
	}
	var prev *termEntry
	for i, t := range terms {
		e := l.entry(t, sc)
		add(e.feats[:e.mid], e.idf[:e.mid])
		if i > 0 {
			raw = append(raw, feature{hash: pairHash(prev.prefix, t), weight: pairWeight})
		}
		add(e.feats[e.mid:], e.idf[e.mid:])
		prev = e
	}
	sc.raw, sc.byID = raw, byID
	return aggregate(sc), byID
}
