package main

import (
	"testing"

	"github.com/toolsearch/toolsearch/cmd/internal/bintest"
)

// TestScenarios runs toolsearch against the misbehaving test upstream,
// both built from this tree, and checks what each scenario must show:
// counts, sizes and states, never a duration. (The 20 s outage is left to
// make reliability; upstream's TestOutageRecoveredByProbe covers it.)
func TestScenarios(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two binaries and runs them for about a minute")
	}
	r := &rig{bin: bintest.Build(t, "../toolsearch"), upBin: bintest.Build(t, "../testupstream"), dir: t.TempDir()}
	want := map[string]func(map[string]float64) bool{
		// A call a second across a 1 s restart: the call made while the
		// upstream is down waits for it (up to 2 s) and is answered; a
		// slow machine whose restart takes longer may lose that one.
		"blip": func(v map[string]float64) bool { return v["lost"] <= 1 },
		"hang": func(v map[string]float64) bool { return v["breaker_refused"] == 1 },
		"huge": func(v map[string]float64) bool { return v["refused"] == 16 && v["peak_rss_mib"] < 256 },
		"slow": func(v map[string]float64) bool {
			return v["fast_ok"] == 1 && v["breaker_closed"] == 1 && v["stale"] == 0
		},
		"wide":     func(v map[string]float64) bool { return v["search_bytes"] < 64<<10 && v["schema_bytes"] < 128<<10 },
		"listen":   func(v map[string]float64) bool { return v["kept"] == 1 && v["list_changed"] >= 1 },
		"progress": func(v map[string]float64) bool { return v["progress"] == 4 },
		"exact": func(v map[string]float64) bool {
			return v["exact"] == 1 && v["meta_exact"] == 1 && v["schema_exact"] == 1
		},
		"change": func(v map[string]float64) bool { return v["found"] == 1 },
		// Found once toolsearch sees its session end and lists, not at
		// the next health ping (15 s) or refresh (a minute here).
		"redeploy":           redeployed,
		"redeploy-stateless": redeployed,
		"upgrade":            func(v map[string]float64) bool { return v["found"] == 1 },
		// 300 announced changes over about 6 s: paced, a rebuild a second
		// or so (unpaced, nearly one each), and the last change lands.
		"flood": func(v map[string]float64) bool { return v["found"] == 1 && v["rebuilds"] <= 20 },
		// Noticed by the health ping (15 s), well before the 1 min
		// refresh, killed or stopped; connected again once back.
		// 15 s of a refused token: probes a second, two, four and eight
		// apart (jittered down by up to half), two requests each (the
		// SDK's server/discover, then initialize), at most 12; probing once
		// a second sent 32.
		"refused": func(v map[string]float64) bool { return v["refused"] <= 12 && v["failing"] == 1 },
		// The connection cut mid-call: the go-sdk's client reconnects
		// with Last-Event-ID and reads the result it missed.
		"cut": func(v map[string]float64) bool { return v["cut"] == 1 && v["answered"] == 1 },
		// toolsearch's own connection to the upstream cut mid-call: it
		// resumes the stream, and the tool runs once.
		"relaycut": func(v map[string]float64) bool { return v["cut"] == 1 && v["answered"] == 1 && v["ran"] == 1 },
		// The same behind a proxy that answers 502 for a moment after:
		// the stream asked for again meets the 502 (gated; a slow
		// machine may ask after the 2.2 s) and is asked once more.
		"gateway": func(v map[string]float64) bool { return v["cut"] == 1 && v["answered"] == 1 && v["ran"] == 1 },
		"quiet": func(v map[string]float64) bool {
			return v["killed_s"] >= 0 && v["killed_s"] < 40 && v["stopped_s"] >= 0 && v["stopped_s"] < 40 && v["back"] == 1
		},
	}
	for _, s := range r.scenarios() {
		check, ok := want[s.name]
		if !ok {
			continue
		}
		t.Run(s.name, func(t *testing.T) {
			res, err := s.f(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if !check(res.values) {
				t.Errorf("%s: %s (%v)", s.name, res.row, res.values)
			}
			t.Log(res.row)
		})
	}
}

// redeployed: the new version's tool found and the upstream connected;
// no failure counted if it was back while toolsearch waits for a
// restarting upstream (2 s). A loaded machine that took longer to start
// it sees a refused connect counted, as a deploy that slow would.
func redeployed(v map[string]float64) bool {
	return v["found"] == 1 && v["connected"] == 1 && (v["clean"] == 1 || v["gone_s"] >= 1.9)
}
