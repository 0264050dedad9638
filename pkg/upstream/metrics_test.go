package upstream

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// metric reads one series from what m exports: name and its labels as
// name=value pairs; -1 when the series is missing.
func metric(t *testing.T, m *Manager, name string, labels map[string]string) float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry() // checks each metric against its Desc
	reg.MustRegister(m)
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
	series:
		for _, s := range f.GetMetric() {
			for _, l := range s.GetLabel() {
				if labels[l.GetName()] != l.GetValue() {
					continue series
				}
			}
			if s.GetGauge() != nil {
				return s.GetGauge().GetValue()
			}
			return s.GetCounter().GetValue()
		}
	}
	return -1
}

// checkMetrics compares series with their wanted values; a negative want
// means "at least -want".
func checkMetrics(t *testing.T, m *Manager, when string, want []struct {
	name   string
	labels map[string]string
	value  float64
}) {
	t.Helper()
	for _, w := range want {
		got := metric(t, m, w.name, w.labels)
		if w.value >= 0 && got != w.value || w.value < 0 && got < -w.value {
			t.Errorf("%s: %s%v = %v, want %v", when, w.name, w.labels, got, w.value)
		}
	}
}
