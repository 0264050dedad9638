package search

import (
	"time"

	"github.com/toolsearch/toolsearch/pkg/access"
	"github.com/toolsearch/toolsearch/pkg/analysis"
	"github.com/toolsearch/toolsearch/pkg/catalog"
	"github.com/toolsearch/toolsearch/pkg/embedding"
	"github.com/toolsearch/toolsearch/pkg/index"
	"github.com/toolsearch/toolsearch/pkg/internal/breaker"
	"github.com/toolsearch/toolsearch/pkg/redact"
)

// Status is what an operator needs to tell a healthy index from a silently
// empty or degraded one. It never holds a secret.
type Status struct {
	Ready bool `json:"ready"`
	// Mode is the default ranking: semantic, or keyword while degraded.
	Mode            Mode       `json:"mode"`
	Degraded        bool       `json:"degraded"`
	Size            int        `json:"size"`
	IndexVersion    string     `json:"index_version,omitempty"`
	BuiltAt         *time.Time `json:"built_at"`
	BuildDurationMS float64    `json:"build_duration_ms"`
	LastError       string     `json:"last_error"`
	LastErrorAt     *time.Time `json:"last_error_at"`
	NextRetryAt     *time.Time `json:"next_retry_at"`
	// PendingChanges is set while an upstream's change is not yet in the
	// published index because its rebuild failed; it is retried at
	// NextRetryAt.
	PendingChanges bool `json:"pending_changes"`
	// LastQueryError is the latest failure to embed a query (that query
	// was answered by keyword ranking).
	LastQueryError   string     `json:"last_query_error"`
	LastQueryErrorAt *time.Time `json:"last_query_error_at"`
	// QueryBreaker is open or half-open while the provider's failures keep
	// queries from it (ranked by keywords meanwhile); absent while closed.
	QueryBreaker string         `json:"query_breaker,omitempty"`
	Embedder     embedding.Info `json:"embedder"`
	// Lexicon names the WordNet tables that expand BM25 queries, and
	// their version (analysis.Lexicon).
	Lexicon     string           `json:"lexicon"`
	Catalog     CatalogStatus    `json:"catalog"`
	Core        []string         `json:"core"`
	Templates   []TemplateStatus `json:"templates"`
	AuthKeys    int              `json:"auth_keys"` // how many API keys are accepted; 0: no auth
	MemoryBytes int64            `json:"memory_bytes"`
	// MemoryNeededBytes is the memory limit the catalog served needs at
	// its peak by the sizing rule (docs/operations.md, Memory), and
	// MemoryLimitBytes the container's (0: none known).
	MemoryNeededBytes int64 `json:"memory_needed_bytes"`
	MemoryLimitBytes  int64 `json:"memory_limit_bytes"`
	// Quantization is the dense index's first pass: none (exact) or
	// binary (codes, then the best Rescore rescored exactly). It is the
	// index's own once one is built, which may be exact where binary was
	// configured; QuantizationNote then says why.
	Quantization     string `json:"quantization"`
	Rescore          int    `json:"rescore,omitempty"`
	QuantizationNote string `json:"quantization_note,omitempty"`
	Version          string `json:"version"`
	// Detail is "full"; a reader without the admin token while API keys
	// are configured gets a Summary instead, whose detail is "summary".
	Detail        string `json:"detail"`
	CoreCount     int    `json:"core_count"`
	TemplateCount int    `json:"template_count"`
	// PolicyWarnings: templates partly visible to a key (Snapshot).
	PolicyWarnings []string `json:"policy_warnings"`
	// Learning is learning from use: whether it is on, what the index
	// holds of it, and the store's last error.
	Learning *LearningStatus `json:"learning,omitempty"`
}

// CatalogStatus describes the indexed catalog.
type CatalogStatus struct {
	Sources []string `json:"sources"`
	Hash    string   `json:"hash"`
	Servers int      `json:"servers"`
	// Bytes is the tools' text and schemas as given (catalog.Bytes): with
	// the count of tools and the vectors' width, what sizes the memory
	// limit (docs/operations.md, "Memory").
	Bytes    int64             `json:"bytes"`
	Warnings []catalog.Warning `json:"warnings"`
	// Skipped lists upstream tools that could not be indexed, and why.
	Skipped []catalog.Warning `json:"skipped"`
	// The lists above hold at most the first Limit entries; the counts
	// are of all (toolsearch lint lists every warning of a catalog file).
	WarningCount int `json:"warning_count"`
	SkippedCount int `json:"skipped_count"`
}

// Status list limits: enough to act on, never the 16 MB a 100,000-tool
// catalog's warnings would make of every probe's answer.
const (
	StatusListLimit      = 20
	AdminStatusListLimit = 1000
	// maxStatusError bounds an error string on the status page: provider
	// error bodies can be whole HTML pages.
	maxStatusError = 1024
)

// Limit keeps the first n entries of each catalog list.
func (st *Status) Limit(n int) {
	st.Catalog.Warnings = st.Catalog.Warnings[:min(n, len(st.Catalog.Warnings))]
	st.Catalog.Skipped = st.Catalog.Skipped[:min(n, len(st.Catalog.Skipped))]
}

// Summary is the status page for a reader without the admin token while
// API keys are configured: whether the service is up and how it ranks,
// and nothing that depends on the catalog. Sizes, counts, hashes,
// versions and build times would each change when tools a key cannot see
// come or go, and errors can name tools, servers or another caller's
// query; all of that is for the admin token (and the log).
type Summary struct {
	Ready    bool           `json:"ready"`
	Mode     Mode           `json:"mode"`
	Degraded bool           `json:"degraded"`
	Embedder embedding.Info `json:"embedder"`
	Lexicon  string         `json:"lexicon"`
	Version  string         `json:"version"`
	Detail   string         `json:"detail"` // "summary"
}

// Summarize is st as its Summary. The embedder's base URL is left out: it
// says where the provider is, which is the operator's to know.
func (st *Status) Summarize() Summary {
	emb := st.Embedder
	emb.BaseURL = ""
	return Summary{Ready: st.Ready, Mode: st.Mode, Degraded: st.Degraded, Embedder: emb, Lexicon: st.Lexicon, Version: st.Version, Detail: "summary"}
}

// TemplateStatus describes one template manifest.
type TemplateStatus struct {
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Tools       []string `json:"tools"` // server/tool, in manifest order
}

// Status reports the current snapshot and the most recent build error. The
// error is kept after a later success (compare last_error_at with built_at),
// so a failed rebuild is visible while the older snapshot keeps serving.
func (s *Service) Status() Status {
	st := Status{Embedder: s.cfg.Embedder.Info(), Lexicon: analysis.Lexicon(), Version: s.cfg.Version, Mode: "none", Quantization: s.cfg.Quantization, Detail: "full",
		Core: []string{}, Templates: []TemplateStatus{}, PolicyWarnings: []string{}, Catalog: CatalogStatus{Sources: []string{}, Warnings: []catalog.Warning{}, Skipped: []catalog.Warning{}}}
	s.mu.Lock()
	st.LastError = redact.Clip(s.lastErr, maxStatusError, "… (cut)")
	st.LastErrorAt = timePtr(s.lastErrAt)
	st.NextRetryAt = timePtr(s.nextRetryAt)
	st.PendingChanges = s.pending
	st.LastQueryError, st.LastQueryErrorAt = redact.Clip(s.lastQErr, maxStatusError, "… (cut)"), timePtr(s.lastQErrAt)
	if b := s.qbreaker.state(s.cfg.Now()); b != breaker.Closed {
		st.QueryBreaker = b
	}
	s.mu.Unlock()
	st.MemoryLimitBytes = max(s.cfg.MemoryLimit, 0)
	snap := s.cur.Load()
	if snap != nil {
		snap.fillStatus(&st)
		st.MemoryNeededBytes = s.need(snap).Limit(s.cfg.Connections, s.cfg.TLS, s.cfg.BodyBudget)
	}
	if st.Quantization == index.QuantBinary {
		st.Rescore = s.cfg.Rescore
	}
	st.Learning = s.learningStatus(snap)
	return st
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// Templates lists the templates caller can use, sorted by name, each with
// only the tools caller can see.
func (s *Service) Templates(caller access.Caller) ([]TemplateStatus, error) {
	snap := s.cur.Load()
	if snap == nil {
		return nil, ErrNotReady
	}
	snap, err := snap.viewFor(caller)
	if err != nil {
		return nil, err
	}
	return snap.templates(), nil
}

func (snap *Snapshot) templates() []TemplateStatus {
	out := make([]TemplateStatus, 0, len(snap.policy.templateNames))
	for _, name := range snap.policy.templateNames {
		t := snap.policy.templates[name]
		out = append(out, TemplateStatus{Name: name, Description: t.Description, Tools: snap.ids(t.rows)})
	}
	return out
}

func (snap *Snapshot) ids(rows []int) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = snap.Catalog.Tool(r).ID()
	}
	return out
}

func (snap *Snapshot) fillStatus(st *Status) {
	built := snap.BuiltAt
	st.Ready = true
	st.Mode = snap.mode()
	st.Degraded = !snap.Semantic() || snap.dropped
	st.Size = snap.Catalog.Len()
	st.IndexVersion = snap.Version
	if snap.PolicyWarnings != nil {
		st.PolicyWarnings = snap.PolicyWarnings
	}
	st.BuiltAt = &built
	st.BuildDurationMS = float64(snap.BuildTook.Microseconds()) / 1000
	st.Embedder = snap.query.Info()
	if snap.Semantic() {
		st.Embedder.Dimensions = snap.Matrix.Dim() // the width actually served, even when the model chose it
		st.MemoryBytes = snap.Matrix.Bytes()
		switch q := snap.Matrix.Quantization(); {
		case q == index.QuantSketch:
			st.Quantization = q
			st.QuantizationNote = "the index is held as its sign codes alone while a rebuild the memory limit cannot hold beside it runs: semantic scores are estimates"
		case q != st.Quantization:
			st.Quantization = q
			st.QuantizationNote = "binary codes not built: an index of the local embedder's vectors this large is kept by column, where exact scores read less than codes would"
		}
	}
	st.Catalog = CatalogStatus{Sources: snap.Catalog.Sources(), Hash: snap.Catalog.Hash(),
		Servers: len(snap.Catalog.Servers()), Bytes: snap.Catalog.Bytes(), Warnings: snap.Catalog.Warnings(), Skipped: snap.Catalog.Skipped()}
	if st.Catalog.Warnings == nil {
		st.Catalog.Warnings = []catalog.Warning{} // "none", not "unknown"
	}
	if st.Catalog.Skipped == nil {
		st.Catalog.Skipped = []catalog.Warning{}
	}
	st.Catalog.WarningCount, st.Catalog.SkippedCount = len(st.Catalog.Warnings), len(st.Catalog.Skipped)
	st.Core = snap.ids(snap.policy.core)
	st.Templates = snap.templates()
	st.CoreCount, st.TemplateCount = len(st.Core), len(st.Templates)
	st.AuthKeys = len(snap.policy.keys)
}
