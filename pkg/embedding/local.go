package embedding

import (
	"context"
	"math"
	"sync"

	"github.com/toolsearch/toolsearch/pkg/analysis"
	"github.com/toolsearch/toolsearch/pkg/internal/chunk"
)

// DefaultLocalDimensions is the width of the local embedder's hashed space.
// Wide enough that the shared real catalogs (a few thousand tools) rarely
// collide, small enough that 10,000 tools fit in 40 MB.
const DefaultLocalDimensions = 1024

// LocalModel names the local embedder's feature scheme; it changes whenever
// the features do, so stored snapshots built with an older scheme are
// rebuilt instead of reused.
const LocalModel = "hashed-tfidf-v3"

// Local is an offline, deterministic embedder: sublinear TF-IDF over stemmed
// words, word pairs and character n-grams, hashed into a fixed number of
// signed buckets. It needs no network and no model files, so the service and
// its tests run anywhere. Fit it on the catalog so that rare words weigh more
// than words every tool shares. A Local is immutable and safe for concurrent
// use.
type Local struct {
	dim int
	idf map[uint64]float32 // feature hash -> inverse document frequency; nil before Fit
	// unseen is the IDF of a feature no fitted document has. Such a feature
	// can only match through a hash collision, so it mostly adds length.
	unseen float32
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
// frequency folded in.
type feature struct {
	hash   uint64
	weight float32
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
	touched []bool
	buckets []int32
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// features returns the weighted features of text, one per distinct hash,
// in the order of first occurrence (so a vector's sums run in the same
// order every time). The
// slice lives in sc and is valid until sc is reused. Hashing is FNV-1a
// written out over the pieces of a feature, so a feature costs no
// allocation; this runs for every query.
func features(text string, sc *scratch) []feature {
	return termFeatures(analysis.English.Terms(text), sc)
}

// termFeatures is features for text already split into analysed terms.
func termFeatures(terms []string, sc *scratch) []feature {
	raw := sc.raw[:0]
	add := func(h uint64, w float32) { raw = append(raw, feature{h, w}) }
	for i, t := range terms {
		add(fnv(fnvKind(kindWord), t), wordWeight)
		for _, c := range analysis.English.Related(t) {
			add(fnv(fnvKind(kindConcept), c), conceptWeight)
		}
		if i > 0 {
			h := fnv(fnvKind(kindPair), terms[i-1])
			h = (h ^ ' ') * fnvPrime
			add(fnv(h, t), pairWeight)
		}
		if len(t) > 3 {
			padded := append(append(append(sc.padded[:0], '<'), t...), '>')
			sc.padded = padded
			for n := 3; n <= 4; n++ {
				w := gramWeight / float32(len(padded)-n+1)
				for j := 0; j+n <= len(padded); j++ {
					add(fnvBytes(fnvKind(kindGram), padded[j:j+n]), w)
				}
			}
		}
	}
	sc.raw = raw
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
			sl.hash = f.hash
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
		out = append(out, feature{hash: sl.hash, weight: w})
	}
	sc.out = out
	return out
}

// slot is one entry of features' counting table; count 0 marks it empty.
type slot struct {
	hash   uint64
	count  int32
	weight float32
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
func (l *Local) Fit(docs []string) Embedder {
	// Each core counts its share of the documents; the counts are summed,
	// so the weights are the same however the work was split.
	parts := make([]map[uint64]int, chunk.Count(len(docs)))
	chunk.Each(len(docs), func(c, lo, hi int) {
		df, sc := map[uint64]int{}, new(scratch)
		for _, d := range docs[lo:hi] {
			for _, f := range features(d, sc) {
				df[f.hash]++
			}
		}
		parts[c] = df
	})
	df := parts[0]
	for _, p := range parts[1:] {
		for k, c := range p {
			df[k] += c
		}
	}
	n := float64(len(docs))
	idf := make(map[uint64]float32, len(df))
	for k, c := range df {
		idf[k] = float32(math.Log((n+1)/(float64(c)+1)) + 1)
	}
	return &Local{dim: l.dim, idf: idf, unseen: float32(math.Log(n+1) + 1)}
}

// Embed returns one unnormalised vector per text. It never fails unless ctx
// is done.
func (l *Local) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	block, err := l.EmbedBlock(ctx, texts)
	if err != nil {
		return nil, err
	}
	out := make([][]float32, len(texts))
	for i := range out {
		out[i] = block[i*l.dim : (i+1)*l.dim : (i+1)*l.dim]
	}
	return out, nil
}

// EmbedBlock is Embed's vectors in one row-major block, len(texts)×Dim,
// written by all cores at once: the block can become the index itself
// (index.Adopt), with no vector allocated or copied alone.
func (l *Local) EmbedBlock(ctx context.Context, texts []string) ([]float32, error) {
	block := make([]float32, len(texts)*l.dim)
	chunk.Each(len(texts), func(_, lo, hi int) {
		sc := scratchPool.Get().(*scratch)
		defer scratchPool.Put(sc)
		for i := lo; i < hi; i++ {
			if i%256 == 0 && ctx.Err() != nil {
				return
			}
			l.accumulate(features(texts[i], sc), block[i*l.dim:(i+1)*l.dim], nil)
		}
	})
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return block, nil
}

// accumulate adds each feature's weighted IDF into its bucket of v and, if
// touched is not nil, marks the bucket.
func (l *Local) accumulate(feats []feature, v []float32, touched []bool) {
	for _, f := range feats {
		k, w := f.hash, f.weight
		idf := l.unseen
		if l.idf != nil {
			if x, ok := l.idf[k]; ok {
				idf = x
			}
		} else {
			idf = 1
		}
		// The low bits pick the bucket, a high bit the sign, so that
		// colliding features cancel on average instead of piling up.
		b := int(k % uint64(l.dim))
		if k>>63 == 1 {
			v[b] -= w * idf
		} else {
			v[b] += w * idf
		}
		if touched != nil {
			touched[b] = true
		}
	}
}

// EmbedSparseTerms returns the vector Embed would for text split into
// analysed terms (the caller needs the terms too, for lexical ranking),
// unnormalised, as its written buckets in bucket order (idx) and their
// values (val): a query has tens of features among a thousand buckets, so
// ranking needs only those columns. Each value is bit for bit Embed's.
func (l *Local) EmbedSparseTerms(terms []string) (idx []int32, val []float32) {
	sc := scratchPool.Get().(*scratch)
	defer scratchPool.Put(sc)
	if len(sc.dense) != l.dim {
		sc.dense, sc.touched = make([]float32, l.dim), make([]bool, l.dim)
	}
	feats := termFeatures(terms, sc)
	l.accumulate(feats, sc.dense, sc.touched)
	// A scan of the marks yields the buckets in order, cheaper than
	// sorting them at the default width.
	buckets := sc.buckets[:0]
	for b, t := range sc.touched {
		if t {
			sc.touched[b] = false // clean for the next use
			buckets = append(buckets, int32(b))
		}
	}
	sc.buckets = buckets
	idx, val = make([]int32, len(buckets)), make([]float32, len(buckets))
	for i, b := range buckets {
		idx[i], val[i] = b, sc.dense[b]
		sc.dense[b] = 0
	}
	return idx, val
}
