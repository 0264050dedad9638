package search

import (
	"fmt"
	"runtime/debug"
	"slices"

	"github.com/toolsearch/toolsearch/pkg/index"
)

// A rebuild builds its index beside the one serving, so for its length
// the process holds two (BENCHMARKS.md, "What a rebuild holds twice").
// Where the container's memory limit cannot hold the new index beside
// the live heap, the rebuild would be OOM-killed; the pod restarts, and
// its start-up build has no index beside it, so it serves again, until
// the change that started the rebuild comes round and kills it once
// more. Serving worse for the rebuild's length is the better of the two:
// the serving index is let go first (makeRoom), down to its sign codes
// (index.Matrix.Sketch, a sixteenth of its rows) where the limit holds
// those, so that searches still rank by meaning, with estimated
// cosines; else wholly, and its snapshot serves on by keywords. Each
// answer is degraded and says why.

// dropReason is what a search answered by keywords while the dense index
// is let go for a rebuild says (diagnostic.embedding_reason);
// sketchReason what one ranked with the index's sign codes says.
const (
	dropReason   = "memory_limit"
	sketchReason = "approximate"
)

// makeRoom lets the serving index go (dropDense) when the container's
// memory limit cannot hold a new index of fresh bytes beside the live
// heap, which the caller has just collected, and the rebuild's garbage
// allowance (rebuildSlack): to its sign codes when the limit holds those
// in its place, else wholly. It reports whether it did, and marks the
// build under way as having done so (Build). No limit known is room for
// anything.
func (s *Service) makeRoom(fresh uint64) bool {
	limit := s.cfg.MemoryLimit
	if limit <= 0 {
		return false
	}
	live := liveHeap()
	if live+fresh+rebuildSlack <= uint64(limit) {
		return false
	}
	cur := s.cur.Load()
	if cur == nil || !cur.Semantic() {
		return false
	}
	// The rows go and their codes stay, and what the views hold of their
	// own goes with them (sketchBytes, viewBytes say what each view keeps
	// and frees). The codes are made beside the rows, so they must fit
	// beside the live heap too. Only a provider's dense vectors are
	// sketched: the share of opposite signs estimates the angle between
	// dense vectors, while the local embedder's sparse ones share a few
	// columns, whose signs say little.
	_, local := s.cfg.Embedder.(fitter)
	codes := sketchBytes(cur)
	sketch := !local && !cur.Matrix.Sketched() && codes > 0 && live+codes <= uint64(limit) &&
		live+codes+fresh+rebuildSlack <= uint64(limit)+uint64(cur.Matrix.Bytes())+viewBytes(cur)
	why := fmt.Sprintf("rebuild: the memory limit (%d MiB) cannot hold a new index of about %d MiB beside the %d MiB live; ", limit>>20, fresh>>20, live>>20)
	if sketch {
		why += fmt.Sprintf("the semantic index is held as its sign codes (%d MiB), and semantic scores are estimates until the rebuild publishes its own", codes>>20)
	} else {
		why += "the semantic index was let go and searches are ranked by keywords until the rebuild publishes its own"
	}
	s.dropDense(cur, why, sketch)
	s.dropped = true
	return true
}

// sketchBytes is what the codes of snap's index and of its views' hold:
// a view whose rows are read from the index reads its codes from the
// index's too (withoutDense).
func sketchBytes(snap *Snapshot) uint64 {
	n := uint64(snap.Matrix.SketchBytes())
	for _, v := range snap.distinctViews() {
		if v.Matrix != nil {
			n += uint64(v.Matrix.SketchBytesWithin(snap.Matrix))
		}
	}
	return n
}

// viewBytes is what the dense indexes of snap's views hold beside its
// own: what a rebuild makes again beside the new index (a provider's
// views, the numbers of the index's rows they read; the local
// embedder's, vectors fitted and embedded afresh), and what letting the
// index go frees with it.
func viewBytes(snap *Snapshot) uint64 {
	var n uint64
	for _, v := range snap.distinctViews() {
		if v.Matrix != nil {
			n += uint64(v.Matrix.Bytes())
		}
	}
	return n
}

// distinctViews are snap's views, each once however many keys share it.
func (snap *Snapshot) distinctViews() []*Snapshot {
	var out []*Snapshot
	for _, v := range snap.views {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// dropDense publishes cur, the snapshot serving, and its views, without
// their dense index, or with only its sign codes (sketch), and forgets
// what referred to that index for the next build (a provider's cached
// rows, a snapshot file's), so that it can be collected once the
// searches reading it end. why is the operator's, in status and the log.
func (s *Service) dropDense(cur *Snapshot, why string, sketch bool) {
	kw := s.withoutDense(cur, sketch, nil)
	kw.Version = s.version(s.seq.Add(1), kw.Catalog, kw)
	copies := map[*Snapshot]*Snapshot{} // keys with the same visibility share a view
	for name, v := range cur.views {
		c, ok := copies[v]
		if !ok {
			c = s.withoutDense(v, sketch, &whole{cur.Matrix, kw.Matrix})
			c.Version = "view-" + fingerprint(c.Catalog, c)
			copies[v] = c
		}
		kw.views[name] = c
	}
	s.last = nil
	if s.preload != nil {
		s.preload.Matrix, s.preload = nil, nil
	}
	s.cur.Store(kw)
	s.metrics.published(kw)
	s.metrics.letGo.Inc()
	s.mu.Lock()
	s.lastErr, s.lastErrAt = why, s.cfg.Now().UTC()
	s.mu.Unlock()
	msg := "the semantic index is let go for this rebuild, which the memory limit cannot hold beside it; searches are ranked by keywords until it is published"
	if sketch {
		msg = "the semantic index is held as its sign codes for this rebuild, which the memory limit cannot hold beside it; semantic scores are estimates until it is published"
	}
	s.logger.Warn(msg, "reason", why, "version", kw.Version, "limit_bytes", s.cfg.MemoryLimit)
	// The index serving is garbage now, less any search still reading it;
	// its pages go back before the new vectors are made.
	debug.FreeOSMemory()
}

// whole is the index a view's rows are read from, and its sketch.
type whole struct{ index, sketch *index.Matrix }

// withoutDense is a copy of snap that ranks by keywords alone, for
// dropDense, or with its dense index's sign codes (sketch): the same
// catalog, keyword index and policy. A view's codes are read from the
// whole index's sketch (of, nil for the whole index) where its rows were
// read from the whole index. Views are the caller's to copy.
func (s *Service) withoutDense(snap *Snapshot, sketch bool, of *whole) *Snapshot {
	kw := *snap
	kw.Preloaded, kw.dropped = false, true
	switch {
	case sketch && kw.Matrix != nil && of != nil:
		kw.Matrix = kw.Matrix.SketchWithin(of.index, of.sketch)
	case sketch && kw.Matrix != nil:
		kw.Matrix = kw.Matrix.Sketch()
	default:
		kw.Matrix = nil
	}
	if kw.Matrix == nil {
		kw.EmbedError = "the semantic index was let go for a rebuild the memory limit cannot hold beside it"
	}
	if snap.views != nil {
		kw.views = make(map[string]*Snapshot, len(snap.views))
	}
	s.rankable(&kw)
	return &kw
}
