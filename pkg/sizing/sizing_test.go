package sizing

import "testing"

// TestRuleCoversMeasurements: the rule is at or over every measurement it
// was fitted to (BENCHMARKS.md, step 27; cmd/scale, 2026-11-27, catalogs
// of catgen -text 1, 5 and 12): the catalog's bytes (status'
// catalog.bytes), the resident set once ready, the highest of the
// start-up's and the three rebuilds' peaks, and what a catalog report
// added to the resident set, in MiB. The local embedder's figures beyond
// 4,096 tools are well under the rule, which counts its vectors dense: a
// catalog of long texts may fill them.
func TestRuleCoversMeasurements(t *testing.T) {
	for _, m := range []struct {
		n, dim                  int
		local                   bool
		text, rss, peak, report float64
	}{
		{73, 1024, true, 0.02, 26.9, 32.6, 2.8},
		{4_000, 1024, true, 1.7, 64.4, 115.1, 8.0},
		{4_000, 1024, true, 17.1, 103.4, 234.2, 49.6},
		{10_000, 1024, true, 4.2, 58.3, 118.6, 21.1},
		{10_000, 1024, true, 18.3, 109.9, 261.1, 55.0},
		{10_000, 1024, true, 42.8, 184.1, 455.2, 117.0},
		{100_000, 1024, true, 42.2, 301.6, 699.7, 225.6},
		{73, 1536, false, 0.02, 26.3, 32.0, 2.6},
		{4_000, 1536, false, 1.7, 55.6, 99.7, 7.9},
		{4_000, 1536, false, 17.1, 95.7, 213.8, 46.2},
		{10_000, 1536, false, 4.2, 99.6, 196.7, 21.0},
		{10_000, 1536, false, 18.3, 132.2, 292.6, 54.5},
		{10_000, 1536, false, 42.8, 200.8, 472.0, 118.2},
		{100_000, 1536, false, 42.2, 741.2, 1553.0, 225.0},
	} {
		c := Catalog{Tools: m.n, TextBytes: int64(m.text * (1 << 20)), Dim: m.dim, Local: m.local}
		mib := func(b int64) float64 { return float64(b) / (1 << 20) }
		if mib(c.Built()) < m.rss || mib(c.Rebuild()) < m.peak || mib(c.Report()) < m.report {
			t.Errorf("%+v: rule %.0f/%.0f/%.0f MiB, measured %.0f/%.0f/%.0f MiB",
				c, mib(c.Built()), mib(c.Rebuild()), mib(c.Report()), m.rss, m.peak, m.report)
		}
	}
}

// TestLimit: the figures docs/operations.md quotes for its examples, with
// the default 2,048 connections.
func TestLimit(t *testing.T) {
	for _, tt := range []struct {
		name string
		c    Catalog
		mib  int64
	}{
		{"the default catalog", Catalog{Tools: 73, TextBytes: 21_367, Dim: 1024, Local: true}, 141},
		{"10,000 tools of 440 bytes, a provider", Catalog{Tools: 10_000, TextBytes: 4_403_000, Dim: 1536}, 342},
		{"10,000 tools of 4,500 bytes, a provider", Catalog{Tools: 10_000, TextBytes: 44_880_000, Dim: 1536}, 767},
		{"100,000 tools of 440 bytes, local", Catalog{Tools: 100_000, TextBytes: 44_250_000, Dim: 1024, Local: true}, 1776},
		{"100,000 tools of 440 bytes, a provider", Catalog{Tools: 100_000, TextBytes: 44_250_000, Dim: 1536}, 2166},
	} {
		if got := tt.c.Limit(2048) >> 20; got != tt.mib {
			t.Errorf("%s: %d MiB, want %d", tt.name, got, tt.mib)
		}
	}
}
