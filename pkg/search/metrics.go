package search

import (
	"slices"
	"strconv"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

type metrics struct {
	builds       *prometheus.CounterVec
	buildSeconds prometheus.Histogram
	letGo        prometheus.Counter
	size         prometheus.Gauge
	bytes        prometheus.Gauge
	degraded     prometheus.Gauge
	needed       prometheus.Gauge
	limit        prometheus.Gauge
	searches     *prometheus.CounterVec
	results      *prometheus.CounterVec
	fallbacks    *prometheus.CounterVec
	embedCalls   *prometheus.CounterVec
	queryCache   *prometheus.CounterVec
	learnEvents  *prometheus.CounterVec
	// searched and returned hold the searches and results counters
	// already looked up (a labelled lookup hashes and locks; this is one
	// atomic load): by kind (the mode's or source's index in kinds) and,
	// for searches, whether degraded. Each is made on first use, so
	// /metrics lists only the series that happened.
	searched [len(kinds)][2]atomic.Pointer[prometheus.Counter]
	returned [len(kinds)]atomic.Pointer[prometheus.Counter]
	// embedded holds the embedding calls counters alike, by purpose (its
	// index in purposes) and whether the call failed: a local search
	// counts its query's embedding.
	embedded [len(purposes)][2]atomic.Pointer[prometheus.Counter]
}

// purposes are what the service embeds for.
var purposes = [...]string{"build", "query"}

// kinds are every mode and source an answer can have.
var kinds = [...]string{string(ModeHybrid), string(ModeSemantic), string(ModeKeyword), string(ModeTemplate),
	string(ModeSelect), string(ModeList), string(ModeRegex), string(SourceCore)}

// count counts one answer and its tools, which come grouped by source
// (retrieved, then core): one counter a group rather than a hit.
func (m *metrics) count(resp *Response) {
	var slot *atomic.Pointer[prometheus.Counter]
	if k := slices.Index(kinds[:], string(resp.Mode)); k >= 0 {
		slot = &m.searched[k][btoi(resp.Degraded)]
	}
	counter(slot, func() prometheus.Counter {
		return m.searches.WithLabelValues(string(resp.Mode), strconv.FormatBool(resp.Degraded))
	}).Inc()
	tools := resp.Tools
	for i := 0; i < len(tools); {
		j := i + 1
		for j < len(tools) && tools[j].Source == tools[i].Source {
			j++
		}
		src := string(tools[i].Source)
		slot = nil
		if k := slices.Index(kinds[:], src); k >= 0 {
			slot = &m.returned[k]
		}
		counter(slot, func() prometheus.Counter { return m.results.WithLabelValues(src) }).Add(float64(j - i))
		i = j
	}
}

// embedding counts one embedding call for purpose, failed when err is
// not nil.
func (m *metrics) embedding(purpose string, err error) {
	var slot *atomic.Pointer[prometheus.Counter]
	if p := slices.Index(purposes[:], purpose); p >= 0 {
		slot = &m.embedded[p][btoi(err != nil)]
	}
	counter(slot, func() prometheus.Counter {
		result := "ok"
		if err != nil {
			result = "error"
		}
		return m.embedCalls.WithLabelValues(purpose, result)
	}).Inc()
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// counter is slot's counter, looked up by lookup the first time; every
// time when slot is nil.
func counter(slot *atomic.Pointer[prometheus.Counter], lookup func() prometheus.Counter) prometheus.Counter {
	if slot == nil {
		return lookup()
	}
	if c := slot.Load(); c != nil {
		return *c
	}
	c := lookup()
	slot.Store(&c)
	return c
}

func newMetrics(reg prometheus.Registerer) *metrics {
	f := promauto.With(reg) // a nil reg creates the metrics without registering them
	m := &metrics{
		builds: f.NewCounterVec(prometheus.CounterOpts{
			Name: "toolsearch_index_builds_total", Help: "Index builds and rebuilds by result: ok, degraded (keyword only), error (nothing published).",
		}, []string{"result"}),
		letGo: f.NewCounter(prometheus.CounterOpts{
			Name: "toolsearch_index_let_go_total", Help: "Rebuilds that let the serving index go first, the memory limit unable to hold the new one beside it; searches were ranked by keywords until it was published.",
		}),
		buildSeconds: f.NewHistogram(prometheus.HistogramOpts{
			Name: "toolsearch_index_build_duration_seconds", Help: "Time to index and embed the catalog.",
			Buckets: prometheus.ExponentialBuckets(0.01, 3, 10),
		}),
		size: f.NewGauge(prometheus.GaugeOpts{
			Name: "toolsearch_index_tools", Help: "Tools in the published index snapshot (0 before the first build).",
		}),
		bytes: f.NewGauge(prometheus.GaugeOpts{
			Name: "toolsearch_index_bytes", Help: "Bytes held by the published snapshot's vectors.",
		}),
		degraded: f.NewGauge(prometheus.GaugeOpts{
			Name: "toolsearch_degraded", Help: "1 while the published snapshot has no semantic index (keyword ranking only), or only its sign codes (semantic scores estimated, for a rebuild the memory limit cannot hold beside the index).",
		}),
		needed: f.NewGauge(prometheus.GaugeOpts{
			Name: "toolsearch_memory_needed_bytes", Help: "The memory limit the published catalog needs at its peak by the sizing rule (docs/operations.md, Memory): a rebuild with every text changed, a catalog report and the connections held (0 before the first build).",
		}),
		limit: f.NewGauge(prometheus.GaugeOpts{
			Name: "toolsearch_memory_limit_bytes", Help: "The container's memory limit (0: none known).",
		}),
		searches: f.NewCounterVec(prometheus.CounterOpts{
			Name: "toolsearch_searches_total", Help: "Searches answered, by mode (hybrid, semantic, keyword, template, select, list) and whether degraded.",
		}, []string{"mode", "degraded"}),
		results: f.NewCounterVec(prometheus.CounterOpts{
			Name: "toolsearch_search_results_total", Help: "Tools returned, by source (hybrid, semantic, keyword, core, template, select, list).",
		}, []string{"source"}),
		fallbacks: f.NewCounterVec(prometheus.CounterOpts{
			Name: "toolsearch_fallbacks_total", Help: "Searches answered by keyword ranking because semantic ranking failed, or (approximate) with the semantic index's sign codes alone, by reason.",
		}, []string{"reason"}),
		queryCache: f.NewCounterVec(prometheus.CounterOpts{
			Name: "toolsearch_query_cache_requests_total", Help: "Query embedding cache lookups by result (hit, miss); the hit ratio is hit / (hit + miss).",
		}, []string{"result"}),
		learnEvents: f.NewCounterVec(prometheus.CounterOpts{
			Name: "toolsearch_learning_events_total", Help: "What searches followed by the use of a returned tool taught, by result: recorded (in the store), error (a write the store failed; the use is held and written again unless it may have been recorded), dropped (lost: the queue to the store was full, or the store failed it six times or past the 1,024 held).",
		}, []string{"result"}),
		embedCalls: f.NewCounterVec(prometheus.CounterOpts{
			Name: "toolsearch_embedding_calls_total", Help: "Embedder calls by purpose (build, query) and result (ok, error).",
		}, []string{"purpose", "result"}),
	}
	// Every fallback reason exists from the start at 0, so an alert on its
	// rate sees the first fallback as an increase, not a new series.
	// (no_index: the snapshot has no semantic index; memory_limit: it was
	// let go for a rebuild; approximate: it was kept as its sign codes,
	// and the search ranked semantically with estimates; the others are
	// embedding.Reason's classes for a failed query embedding.)
	for _, r := range DegradedReasons() {
		m.fallbacks.WithLabelValues(r)
	}
	for _, r := range []string{"recorded", "error", "dropped"} {
		m.learnEvents.WithLabelValues(r)
	}
	return m
}

func (m *metrics) published(snap *Snapshot) {
	m.size.Set(float64(snap.Catalog.Len()))
	if snap.Semantic() {
		m.bytes.Set(float64(snap.Matrix.Bytes()))
		m.degraded.Set(float64(btoi(snap.dropped)))
	} else {
		m.bytes.Set(0)
		m.degraded.Set(1)
	}
}
