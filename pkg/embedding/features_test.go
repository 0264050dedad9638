package embedding

import (
	"math"
	"slices"
	"strings"
	"testing"
)

// plainFeatures is termFeatures' counting written the plain way, with a map
// and a slice for first-occurrence order: the reference the open-addressing
// table must match exactly.
func plainFeatures(text string) []feature {
	var order []uint64
	count := map[uint64]int{}
	last := map[uint64]float32{}
	raw := rawFeatures(text)
	for _, f := range raw {
		if count[f.hash] == 0 {
			order = append(order, f.hash)
		}
		count[f.hash]++
		last[f.hash] = f.weight
	}
	out := make([]feature, 0, len(order))
	for _, h := range order {
		w := last[h]
		if c := count[h]; c > 1 {
			w *= float32(1 + math.Log(float64(c)))
		}
		out = append(out, feature{hash: h, weight: w})
	}
	return out
}

// rawFeatures is every occurrence termFeatures hashes, in text order.
func rawFeatures(text string) []feature {
	sc := new(scratch)
	features(text, sc)
	return slices.Clone(sc.raw)
}

func TestFeaturesMatchPlainCounting(t *testing.T) {
	for _, text := range []string{
		"", "x", "send a chat message", "file files filing filed " + strings.Repeat("issue ", 50),
		"createPullRequest create_pull_request HTTPServer über café", strings.Repeat("a b c d e f g h ", 40),
	} {
		got := slices.Clone(features(text, new(scratch)))
		if want := plainFeatures(text); !slices.Equal(got, want) {
			t.Errorf("features(%q): %d features, plain counting %d (or weights/order differ)", text, len(got), len(want))
		}
	}
}
