package hashtab

import (
	"maps"
	"testing"
)

// TestTable: values added, grown past the first size, and updated in
// place, the zero key among them, read back by key; for hashes, and for
// keys that differ only in their high bits, as BM25's pairs of term
// numbers do.
func TestTable(t *testing.T) {
	hashes := []uint64{0, 1, 17, 1 << 63, 33, 49}
	for i := 1; i <= 100; i++ {
		hashes = append(hashes, uint64(i)*0x9e3779b97f4a7c15)
	}
	var pairs []uint64
	for a := range uint64(40) {
		for b := range uint64(5) {
			pairs = append(pairs, (a+1)<<32|b)
		}
	}
	for _, tt := range []struct {
		name string
		keys []uint64
	}{{"hashes", hashes}, {"pairs", pairs}} {
		t.Run(tt.name, func(t *testing.T) {
			tab := New[float32](4)
			for i, k := range tt.keys {
				v, added := tab.At(k)
				if !added {
					t.Fatalf("key %#x added twice", k)
				}
				*v = float32(i)
			}
			tab.Update(func(v float32) float32 { return 2*v + 1 })
			want := map[uint64]float32{}
			for i, k := range tt.keys {
				want[k] = float32(2*i + 1)
				if got, ok := tab.Get(k); !ok || got != float32(2*i+1) {
					t.Errorf("key %#x: %v, %v; want %v", k, got, ok, 2*i+1)
				}
			}
			if _, ok := tab.Get(12345); ok {
				t.Error("a key never added has a value")
			}
			if tab.Len() != len(tt.keys) {
				t.Errorf("Len %d, want %d", tab.Len(), len(tt.keys))
			}
			got := map[uint64]float32{}
			tab.Each(func(k uint64, v float32) { got[k] = v })
			if !maps.Equal(got, want) {
				t.Errorf("Each gave %d keys, want %d", len(got), len(want))
			}
		})
	}
}
