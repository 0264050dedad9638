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
// the default 2,048 connections and 16 MiB of request bodies.
func TestLimit(t *testing.T) {
	for _, tt := range []struct {
		name string
		c    Catalog
		mib  int64
		tls  bool
	}{
		{"the default catalog", Catalog{Tools: 73, TextBytes: 21_367, Dim: 1024, Local: true}, 213, false},
		{"the default catalog, connections over TLS", Catalog{Tools: 73, TextBytes: 21_367, Dim: 1024, Local: true}, 285, true},
		{"10,000 tools of 440 bytes, a provider", Catalog{Tools: 10_000, TextBytes: 4_403_000, Dim: 1536}, 414, false},
		{"10,000 tools of 4,500 bytes, a provider", Catalog{Tools: 10_000, TextBytes: 44_880_000, Dim: 1536}, 839, false},
		{"100,000 tools of 440 bytes, local", Catalog{Tools: 100_000, TextBytes: 44_250_000, Dim: 1024, Local: true}, 1848, false},
		{"100,000 tools of 440 bytes, a provider", Catalog{Tools: 100_000, TextBytes: 44_250_000, Dim: 1536}, 2238, false},
	} {
		if got := tt.c.Limit(2048, tt.tls, 16<<20) >> 20; got != tt.mib {
			t.Errorf("%s: %d MiB, want %d", tt.name, got, tt.mib)
		}
	}
}

// TestRuleCoversViews: keys that each see part of the catalog have it
// indexed again as a catalog of its own, which the rule counts.
// Measured 2026-11-28 (BENCHMARKS.md, "Views in the memory rule"):
// 10,000 generated tools (catgen -text 1, 4.2 MiB of text), keys that
// each see about 60 % of the servers (each view's text taken as its
// share of the tools'), the local embedder and a provider at D = 1,536;
// the resident set once ready and the peak of a rebuild with every text
// changed, in MiB. Through the provider, when views copied their rows,
// twelve such views peaked at 685 MiB, twice the 342 the rule gave
// without them; they read the index's rows now (index.Matrix.Subset).
func TestRuleCoversViews(t *testing.T) {
	const tools, text = 10_000, 4_403_064 // status' catalog.bytes
	four := []int{5460, 5706, 5983, 5513}
	twelve := []int{5749, 6510, 6052, 6252, 6538, 5880, 5837, 5759, 5711, 6563, 6371, 5553}
	for _, m := range []struct {
		local     bool
		views     []int
		rss, peak float64
	}{
		{true, nil, 56, 115},
		{true, four, 116, 192},
		{true, twelve, 243, 343},
		{false, nil, 99, 193},
		{false, twelve, 158, 257},
	} {
		dim := map[bool]int{true: 1024, false: 1536}[m.local]
		c := Catalog{Tools: tools, TextBytes: text, Dim: dim, Local: m.local}
		for _, n := range m.views {
			c.Views = append(c.Views, Catalog{Tools: n, TextBytes: text * int64(n) / tools, Dim: dim, Local: m.local})
		}
		mib := func(b int64) float64 { return float64(b) / (1 << 20) }
		if mib(c.Built()) < m.rss || mib(c.Rebuild()) < m.peak {
			t.Errorf("local %v, %d views: rule %.0f/%.0f MiB, measured %.0f/%.0f MiB", m.local, len(m.views), mib(c.Built()), mib(c.Rebuild()), m.rss, m.peak)
		}
	}
	// The views' figures are their own: a catalog of none is the rule's
	// figure for the catalog alone.
	alone := Catalog{Tools: tools, TextBytes: text, Dim: 1024, Local: true}
	if got, want := (Catalog{Tools: tools, TextBytes: text, Dim: 1024, Local: true, Views: []Catalog{}}).Limit(0, false, 0), alone.Limit(0, false, 0); got != want {
		t.Errorf("no views: %d, want %d", got, want)
	}
}

// TestRuleWithBuiltVectors: with the vectors counted as built (status'
// memory_bytes, what the service reads), the rule still covers every
// local measurement; the local embedder's vectors are where the dense
// count was furthest over. Measured 2026-12-04 with cmd/scale (generated
// tools, -text 1, 5 and 12; resident set once ready and the highest
// start-up or rebuild peak, in MiB), and for twelve keys each seeing
// about 60 % of 10,000 tools' servers, with the views' own indexes'
// bytes (BENCHMARKS.md, "The memory rule reads the index built").
func TestRuleWithBuiltVectors(t *testing.T) {
	const mib = 1 << 20
	twelve := []struct{ tools, text, vectors int64 }{
		{5971, 2613814, 8801970}, {6053, 2672352, 8954965}, {5826, 2568493, 8607965}, {5886, 2600793, 8710435},
		{6092, 2667102, 8959790}, {5672, 2507443, 8411730}, {6298, 2776357, 9299390}, {5914, 2594261, 8709255},
		{6138, 2704574, 9057745}, {5670, 2488735, 8334885}, {6140, 2703706, 9052025}, {6178, 2732318, 9147060},
	}
	for _, m := range []struct {
		n             int
		text, vectors float64 // MiB
		rss, peak     float64
		views         bool
	}{
		{n: 73, text: 0.02, vectors: 0.6, rss: 29.5, peak: 34.0},
		{n: 4_000, text: 1.7, vectors: 31.2, rss: 66.9, peak: 117.5},
		{n: 4_000, text: 7.4, vectors: 31.2, rss: 81.6, peak: 164.4},
		{n: 4_000, text: 17.1, vectors: 31.2, rss: 105.9, peak: 235.9},
		{n: 10_000, text: 4.2, vectors: 14.1, rss: 59.1, peak: 119.4},
		{n: 10_000, text: 18.3, vectors: 31.4, rss: 110.6, peak: 261.0},
		{n: 10_000, text: 42.8, vectors: 39.1, rss: 183.9, peak: 465.0},
		{n: 100_000, text: 42.2, vectors: 142.6, rss: 303.9, peak: 698.5},
		{n: 10_000, text: 4.2, vectors: 14.1, rss: 244, peak: 546, views: true},
	} {
		c := Catalog{Tools: m.n, TextBytes: int64(m.text * mib), Dim: 1024, Local: true, VectorBytes: int64(m.vectors * mib)}
		if m.views {
			for _, v := range twelve {
				c.Views = append(c.Views, Catalog{Tools: int(v.tools), TextBytes: v.text, Dim: 1024, Local: true, VectorBytes: v.vectors})
			}
		}
		got := func(b int64) float64 { return float64(b) / mib }
		if got(c.Built()) < m.rss || got(c.Rebuild()) < m.peak {
			t.Errorf("%d tools, %.1f MiB of text, views %v: rule %.0f/%.0f MiB, measured %.0f/%.0f MiB",
				m.n, m.text, m.views, got(c.Built()), got(c.Rebuild()), m.rss, m.peak)
		}
	}
}
