package search

import (
	"time"

	"github.com/toolsearch/toolsearch/pkg/catalog"
	"github.com/toolsearch/toolsearch/pkg/embed"
)

// Status is what an operator needs to tell a healthy index from a silently
// empty one. It never holds a secret.
type Status struct {
	Ready           bool          `json:"ready"`
	Size            int           `json:"size"`
	IndexVersion    string        `json:"index_version,omitempty"`
	BuiltAt         *time.Time    `json:"built_at"`
	BuildDurationMS float64       `json:"build_duration_ms"`
	LastError       string        `json:"last_error"`
	LastErrorAt     *time.Time    `json:"last_error_at"`
	NextRetryAt     *time.Time    `json:"next_retry_at,omitempty"`
	Embedder        embed.Info    `json:"embedder"`
	Catalog         CatalogStatus `json:"catalog"`
	MemoryBytes     int64         `json:"memory_bytes"`
	Version         string        `json:"version"`
}

// CatalogStatus describes the indexed catalog.
type CatalogStatus struct {
	Sources  []string          `json:"sources"`
	Hash     string            `json:"hash"`
	Servers  int               `json:"servers"`
	Warnings []catalog.Warning `json:"warnings"`
}

// Status reports the current snapshot and the most recent build error. The
// error is kept after a later success (compare last_error_at with built_at),
// so a failed rebuild is visible while the older snapshot keeps serving.
func (s *Service) Status() Status {
	st := Status{Embedder: s.cfg.Embedder.Info(), Version: s.cfg.Version}
	s.mu.Lock()
	st.LastError = s.lastErr
	if !s.lastErrAt.IsZero() {
		at := s.lastErrAt
		st.LastErrorAt = &at
	}
	if !s.nextRetryAt.IsZero() {
		at := s.nextRetryAt
		st.NextRetryAt = &at
	}
	st.Catalog.Sources = s.sources
	st.Catalog.Warnings = s.warnings
	s.mu.Unlock()
	if snap := s.cur.Load(); snap != nil {
		s.fillSnapshot(&st, snap)
	}
	if st.Catalog.Warnings == nil {
		st.Catalog.Warnings = []catalog.Warning{} // "none", not "unknown"
	}
	return st
}

func (s *Service) fillSnapshot(st *Status, snap *Snapshot) {
	built := snap.BuiltAt
	st.Ready = true
	st.Size = snap.Catalog.Len()
	st.IndexVersion = snap.Version
	st.BuiltAt = &built
	st.BuildDurationMS = float64(snap.BuildTook.Microseconds()) / 1000
	st.Embedder = snap.query.Info()
	st.Embedder.Dimensions = snap.Matrix.Dim() // the width actually served, even when the model chose it
	st.Catalog.Sources = snap.Catalog.Sources()
	st.Catalog.Warnings = snap.Catalog.Warnings()
	st.Catalog.Hash = snap.Catalog.Hash()
	st.Catalog.Servers = len(snap.Catalog.Servers())
	st.MemoryBytes = snap.Matrix.Bytes()
}
