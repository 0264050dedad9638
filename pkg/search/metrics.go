package search

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

type metrics struct {
	builds       *prometheus.CounterVec
	buildSeconds prometheus.Histogram
	size         prometheus.Gauge
	bytes        prometheus.Gauge
	searches     *prometheus.CounterVec
	embedErrors  prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	f := promauto.With(reg) // a nil reg creates the metrics without registering them
	return &metrics{
		builds: f.NewCounterVec(prometheus.CounterOpts{
			Name: "toolsearch_index_builds_total", Help: "Index builds by result (ok, error).",
		}, []string{"result"}),
		buildSeconds: f.NewHistogram(prometheus.HistogramOpts{
			Name: "toolsearch_index_build_duration_seconds", Help: "Time to load, embed and index the catalog.",
			Buckets: prometheus.ExponentialBuckets(0.01, 3, 10),
		}),
		size: f.NewGauge(prometheus.GaugeOpts{
			Name: "toolsearch_index_tools", Help: "Tools in the published index snapshot (0 before the first build).",
		}),
		bytes: f.NewGauge(prometheus.GaugeOpts{
			Name: "toolsearch_index_bytes", Help: "Bytes held by the published snapshot's vectors.",
		}),
		searches: f.NewCounterVec(prometheus.CounterOpts{
			Name: "toolsearch_searches_total", Help: "Searches answered, by ranking mode.",
		}, []string{"mode"}),
		embedErrors: f.NewCounter(prometheus.CounterOpts{
			Name: "toolsearch_query_embedding_errors_total", Help: "Query embeddings that failed.",
		}),
	}
}
