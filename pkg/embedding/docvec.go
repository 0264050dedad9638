package embedding

import "math"

// docVectors embeds a corpus's documents from their vocabulary features'
// ids: termFeatures, aggregate and accumulate, which a query goes
// through, give the same vector bit for bit, but hash every feature into
// a table to count it, and look its weight and bucket up. Here an id
// indexes its entry in the document (a sparse set, so nothing is cleared
// between documents) and its weight and bucket, worked out once per id;
// only a pair, which has no id, is hashed. This was most of a local
// build's embedding time.
type docVectors struct {
	l  *Local
	vf *vocabFeatures
	// byID is each id's weight and bucket, the weight negated where the
	// feature's hash sends it down: v[b] + w×(−x) is v[b] − w×x exactly.
	byID []idWeight
	// pairIDs: some pair of the corpus hashes as a vocabulary feature
	// does, so pairs are looked up among the ids to be counted with it.
	// Fitting finds out; without it, every pair is looked up.
	pairIDs bool
}

type idWeight struct {
	w      float32
	bucket uint32
}

func newDocVectors(l *Local, vf *vocabFeatures, pairIDs bool) *docVectors {
	byID := make([]idWeight, len(vf.hashes))
	for fid, h := range vf.hashes {
		byID[fid] = l.signedWeight(h)
	}
	return &docVectors{l: l, vf: vf, byID: byID, pairIDs: pairIDs}
}

// signedWeight is hash's weight and bucket, the weight negated where the
// hash's high bit sends it down (accumulate).
func (l *Local) signedWeight(hash uint64) idWeight {
	x := idWeight{l.weight(hash), uint32(l.bucket(hash))}
	if hash>>63 == 1 {
		x.w = -x.w
	}
	return x
}

// docWork is one core's working memory for docVectors.
type docWork struct {
	at    []int32 // an id's entry in out, if out's entry there has that id
	out   []docEntry
	pairs []int32 // open addressing over this document's pairs: entry+1, 0 empty
}

// docEntry is one distinct feature of a document: an id's or, with fid 0,
// a pair's by hash; its count and its last occurrence's weight.
type docEntry struct {
	hash   uint64
	fid    uint32
	count  int32
	weight float32
}

func (dv *docVectors) newWork() *docWork { return &docWork{at: make([]int32, len(dv.byID))} }

// tfBoost is 1+ln(n), the sublinear term frequency aggregate applies,
// worked out once for the counts a document's features mostly have.
var tfBoost = func() (t [64]float32) {
	for n := 1; n < len(t); n++ {
		t[n] = float32(1 + math.Log(float64(n)))
	}
	return t
}()

// embed writes document doc's vector into v (zero, dim long) and marks
// its buckets in touched.
func (dv *docVectors) embed(doc []uint32, w *docWork, v []float32, touched []uint64) {
	vf := dv.vf
	w.out = w.out[:0]
	size := 16
	for size < 2*len(doc) {
		size *= 2
	}
	if cap(w.pairs) < size {
		w.pairs = make([]int32, size)
	}
	w.pairs = w.pairs[:size]
	clear(w.pairs)
	for i, t := range doc {
		for _, f := range vf.feats[vf.at[t]:vf.mid[t]] {
			w.add(f.fid, f.weight)
		}
		if i > 0 {
			h := pairHash(vf.prefix[doc[i-1]], vf.vocab[t])
			var fid uint32
			if dv.pairIDs {
				fid, _ = vf.ids.Get(h)
			}
			if fid != 0 {
				w.add(fid, pairWeight)
			} else {
				w.addPair(h, pairWeight)
			}
		}
		for _, f := range vf.feats[vf.mid[t]:vf.at[t+1]] {
			w.add(f.fid, f.weight)
		}
	}
	for _, e := range w.out {
		wt := e.weight
		if e.count > 1 {
			if int(e.count) < len(tfBoost) {
				wt *= tfBoost[e.count]
			} else {
				wt *= float32(1 + math.Log(float64(e.count)))
			}
		}
		var x idWeight
		if e.fid != 0 {
			x = dv.byID[e.fid]
		} else {
			x = dv.l.signedWeight(e.hash)
		}
		v[x.bucket] += wt * x.w
		touched[x.bucket/64] |= 1 << (x.bucket % 64)
	}
}

func (w *docWork) add(fid uint32, weight float32) {
	if i := w.at[fid]; int(i) < len(w.out) && w.out[i].fid == fid {
		w.out[i].count++
		w.out[i].weight = weight
		return
	}
	w.at[fid] = int32(len(w.out))
	w.out = append(w.out, docEntry{fid: fid, count: 1, weight: weight})
}

func (w *docWork) addPair(h uint64, weight float32) {
	mask := uint64(len(w.pairs) - 1)
	i := h & mask
	for w.pairs[i] != 0 && w.out[w.pairs[i]-1].hash != h {
		i = (i + 1) & mask
	}
	if w.pairs[i] == 0 {
		w.out = append(w.out, docEntry{hash: h, count: 1, weight: weight})
		w.pairs[i] = int32(len(w.out))
		return
	}
	e := &w.out[w.pairs[i]-1]
	e.count++
	e.weight = weight
}
