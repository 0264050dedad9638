package embedding

import "testing"

// TestTable: values added, grown past the first size, and updated in
// place, the zero hash among them, read back by hash.
func TestTable(t *testing.T) {
	tab := newTable[float32](4)
	hashes := []uint64{0, 1, 17, 1 << 63, 33, 49}
	for i := 1; i <= 100; i++ {
		hashes = append(hashes, uint64(i)*0x9e3779b97f4a7c15)
	}
	for i, h := range hashes {
		v, added := tab.at(h)
		if !added && h != 0 {
			t.Fatalf("hash %#x added twice", h)
		}
		*v = float32(i)
	}
	tab.update(func(v float32) float32 { return 2*v + 1 })
	for i, h := range hashes {
		if got, ok := tab.get(h); !ok || got != float32(2*i+1) {
			t.Errorf("hash %#x: %v, %v; want %v", h, got, ok, 2*i+1)
		}
	}
	if _, ok := tab.get(12345); ok {
		t.Error("a hash never added has a value")
	}
	if tab.Len() != len(hashes) {
		t.Errorf("Len %d, want %d", tab.Len(), len(hashes))
	}
}
