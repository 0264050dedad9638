package memo

import (
	"fmt"
	"sync"
	"testing"
)

func TestGetPut(t *testing.T) {
	m := New[int]()
	if got := m.Get("a"); got != nil {
		t.Fatalf("Get on an empty memo = %v, want nil", *got)
	}
	if p := m.Put("a", 1); *p != 1 {
		t.Fatalf("Put returned %d, want 1", *p)
	}
	if got := m.Get("a"); got == nil || *got != 1 {
		t.Fatalf("Get(a) = %v, want 1", got)
	}
	m.Put("a", 2) // putting a kept key again replaces it, and moves nothing
	if got := m.Get("a"); got == nil || *got != 2 {
		t.Fatalf("Get(a) after a second Put = %v, want 2", got)
	}
}

// keysInOnePair returns n keys that hash to the same pair of m's slots.
func keysInOnePair[V any](m *Memo[V], n int) []string {
	byPair := map[int][]string{}
	for i := 0; ; i++ {
		k := fmt.Sprint("key", i)
		p := m.pair(k)
		byPair[p] = append(byPair[p], k)
		if len(byPair[p]) == n {
			return byPair[p]
		}
	}
}

// Two keys of one pair are both kept; a third evicts the older of them.
func TestPairKeepsTwo(t *testing.T) {
	m := New[string]()
	ks := keysInOnePair(m, 3)
	for _, k := range ks[:2] {
		m.Put(k, k)
	}
	for _, k := range ks[:2] {
		if got := m.Get(k); got == nil || *got != k {
			t.Fatalf("Get(%s) = %v with two keys in its pair, want it kept", k, got)
		}
	}
	m.Put(ks[2], ks[2])
	tests := []struct {
		key  string
		kept bool
	}{{ks[0], false}, {ks[1], true}, {ks[2], true}}
	for _, tt := range tests {
		if got := m.Get(tt.key); (got != nil) != tt.kept {
			t.Errorf("Get(%s) kept = %v, want %v", tt.key, got != nil, tt.kept)
		}
	}
}

// Concurrent readers and writers see either nothing or a key's own value
// (run with -race).
func TestConcurrent(t *testing.T) {
	m := New[string]()
	keys := keysInOnePair(m, 4)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 2000 {
				k := keys[(g+i)%len(keys)]
				if v := m.Get(k); v != nil && *v != k {
					t.Errorf("Get(%s) = %s", k, *v)
					return
				}
				m.Put(k, k)
			}
		})
	}
	wg.Wait()
}
