package search

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
)

// count's cached counters count what a labelled lookup would: by mode and
// degradation, and tools by source, each series made on its first use.
func TestCountByModeAndSource(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := newMetrics(reg)
	answers := []*Response{
		{Mode: ModeHybrid, Tools: []Hit{{Source: Source(ModeHybrid)}, {Source: Source(ModeHybrid)}, {Source: SourceCore}}},
		{Mode: ModeHybrid, Tools: []Hit{{Source: SourceCore}}},
		{Mode: ModeKeyword, Degraded: true, Tools: []Hit{{Source: Source(ModeKeyword)}}},
		{Mode: ModeKeyword}, // the same mode, not degraded: a series of its own
		{Mode: ModeTemplate, Tools: []Hit{{Source: SourceTemplate}, {Source: SourceCore}}},
		{Mode: "unlisted", Tools: []Hit{{Source: "unlisted"}}}, // no slot: counted through the vector
	}
	for _, r := range answers {
		m.count(r)
	}
	want := map[string]float64{
		`toolsearch_search_results_total{source="core"}`:              3,
		`toolsearch_search_results_total{source="hybrid"}`:            2,
		`toolsearch_search_results_total{source="keyword"}`:           1,
		`toolsearch_search_results_total{source="template"}`:          1,
		`toolsearch_search_results_total{source="unlisted"}`:          1,
		`toolsearch_searches_total{degraded="false",mode="hybrid"}`:   2,
		`toolsearch_searches_total{degraded="false",mode="template"}`: 1,
		`toolsearch_searches_total{degraded="false",mode="unlisted"}`: 1,
		`toolsearch_searches_total{degraded="true",mode="keyword"}`:   1,
		`toolsearch_searches_total{degraded="false",mode="keyword"}`:  1,
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range families {
		if n := f.GetName(); n != "toolsearch_searches_total" && n != "toolsearch_search_results_total" {
			continue
		}
		for _, s := range f.GetMetric() {
			var labels []string
			for _, l := range s.GetLabel() {
				labels = append(labels, l.GetName()+`="`+l.GetValue()+`"`)
			}
			got[f.GetName()+"{"+strings.Join(labels, ",")+"}"] = s.GetCounter().GetValue()
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("counters (-want +got):\n%s", diff)
	}
}
