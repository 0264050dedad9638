package embed

import (
	"context"
	"math"

	"github.com/toolsearch/toolsearch/pkg/synonym"
	"github.com/toolsearch/toolsearch/pkg/tokenize"
)

// DefaultLocalDimensions is the width of the local embedder's hashed space.
// Wide enough that the shared real catalogs (a few thousand tools) rarely
// collide, small enough that 10,000 tools fit in 40 MB.
const DefaultLocalDimensions = 1024

// LocalModel names the local embedder's feature scheme; it changes whenever
// the features do, so stored snapshots built with an older scheme are
// rebuilt instead of reused.
const LocalModel = "hashed-tfidf-v1"

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

// features returns the weighted features of text with their term counts
// folded in (sublinear tf). Hashing is FNV-1a written out, so a feature
// costs no allocation; this runs for every query.
func features(text string) map[uint64]float32 {
	type acc struct{ count, weight float32 }
	feats := map[uint64]acc{}
	add := func(kind byte, s string, w float32) {
		h := uint64(fnvOffset)
		h = (h ^ uint64(kind)) * fnvPrime
		for i := 0; i < len(s); i++ {
			h = (h ^ uint64(s[i])) * fnvPrime
		}
		f := feats[h]
		f.count++
		f.weight = w
		feats[h] = f
	}
	terms := tokenize.Terms(text)
	for i, t := range terms {
		add(kindWord, t, wordWeight)
		for _, c := range synonym.Concepts(t) {
			add(kindConcept, c, conceptWeight)
		}
		if i > 0 {
			add(kindPair, terms[i-1]+" "+t, pairWeight)
		}
		if len(t) > 3 {
			padded := "<" + t + ">"
			for n := 3; n <= 4; n++ {
				for j := 0; j+n <= len(padded); j++ {
					add(kindGram, padded[j:j+n], gramWeight/float32(len(padded)-n+1))
				}
			}
		}
	}
	out := make(map[uint64]float32, len(feats))
	for k, f := range feats {
		out[k] = f.weight * float32(1+math.Log(float64(f.count)))
	}
	return out
}

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// Fit returns a copy of l whose IDF weights come from docs, the texts the
// index will hold. Queries must be embedded by the fitted copy.
func (l *Local) Fit(docs []string) *Local {
	df := map[uint64]int{}
	for _, d := range docs {
		for k := range features(d) {
			df[k]++
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
	out := make([][]float32, len(texts))
	for i, t := range texts {
		if i%256 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		v := make([]float32, l.dim)
		for k, w := range features(t) {
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
		}
		out[i] = v
	}
	return out, nil
}
