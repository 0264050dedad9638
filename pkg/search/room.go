package search

import (
	"fmt"
	"runtime/debug"
)

// A rebuild builds its index beside the one serving, so for its length
// the process holds two (BENCHMARKS.md, "What a rebuild holds twice").
// Where the container's memory limit cannot hold the new index beside
// the live heap, the rebuild would be OOM-killed; the pod restarts, and
// its start-up build has no index beside it, so it serves again, until
// the change that started the rebuild comes round and kills it once
// more. Keyword ranking for the rebuild's length is the better of the
// two: the serving index is let go first (makeRoom), and its snapshot
// serves on by keywords, each answer degraded and saying why.

// dropReason is what a search answered by keywords while the dense index
// is let go for a rebuild says (diagnostic.embedding_reason).
const dropReason = "memory_limit"

// makeRoom lets the serving index go (dropDense) when the container's
// memory limit cannot hold a new index of fresh bytes beside the live
// heap, which the caller has just collected, and the rebuild's garbage
// allowance (rebuildSlack). It reports whether it did, and marks the
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
	why := fmt.Sprintf("rebuild: the memory limit (%d MiB) cannot hold a new index of about %d MiB beside the %d MiB live; the semantic index was let go and searches are ranked by keywords until the rebuild publishes its own",
		limit>>20, fresh>>20, live>>20)
	if !s.dropDense(why) {
		return false
	}
	s.dropped = true
	return true
}

// dropDense publishes the snapshot serving, and its views, without their
// dense index, and forgets what referred to that index for the next
// build (a provider's cached rows, a snapshot file's), so that it can be
// collected once the searches reading it end. why is the operator's, in
// status and the log. It reports whether there was a dense index to let
// go.
func (s *Service) dropDense(why string) bool {
	cur := s.cur.Load()
	if cur == nil || !cur.Semantic() {
		return false
	}
	kw := s.withoutDense(cur)
	kw.Version = s.version(s.seq.Add(1), kw.Catalog, kw)
	copies := map[*Snapshot]*Snapshot{} // keys with the same visibility share a view
	for name, v := range cur.views {
		c, ok := copies[v]
		if !ok {
			c = s.withoutDense(v)
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
	s.logger.Warn("the semantic index is let go for this rebuild, which the memory limit cannot hold beside it; searches are ranked by keywords until it is published",
		"reason", why, "version", kw.Version, "limit_bytes", s.cfg.MemoryLimit)
	// The index serving is garbage now, less any search still reading it;
	// its pages go back before the new vectors are made.
	debug.FreeOSMemory()
	return true
}

// withoutDense is a copy of snap that ranks by keywords alone, for
// dropDense: the same catalog, keyword index and policy, no dense index.
// Views are the caller's to copy.
func (s *Service) withoutDense(snap *Snapshot) *Snapshot {
	kw := *snap
	kw.Matrix, kw.Preloaded, kw.dropped = nil, false, true
	kw.EmbedError = "the semantic index was let go for a rebuild the memory limit cannot hold beside it"
	if snap.views != nil {
		kw.views = make(map[string]*Snapshot, len(snap.views))
	}
	s.rankable(&kw)
	return &kw
}
