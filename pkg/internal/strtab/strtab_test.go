package strtab

import (
	"fmt"
	"testing"
)

func TestTable(t *testing.T) {
	tests := []struct {
		name string
		strs []string
	}{
		{"none", nil},
		{"one", []string{"a"}},
		{"empty string", []string{"", "x"}},
		{"many", func() []string {
			var s []string
			for i := range 5000 {
				s = append(s, fmt.Sprintf("w%d", i))
			}
			return s
		}()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tab := New(tt.strs)
			if tab.Len() != len(tt.strs) {
				t.Fatalf("Len %d, want %d", tab.Len(), len(tt.strs))
			}
			for i, s := range tt.strs {
				if got := tab.Number(s); got != int32(i) {
					t.Fatalf("Number(%q) = %d, want %d", s, got, i)
				}
				if got := tab.String(int32(i)); got != s {
					t.Fatalf("String(%d) = %q, want %q", i, got, s)
				}
			}
			for _, s := range []string{"absent", "w5000", "a\x00"} {
				if n := tab.Number(s); n >= 0 && tt.strs[n] != s {
					t.Errorf("Number(%q) = %d", s, n)
				} else if n < 0 && contains(tt.strs, s) {
					t.Errorf("Number(%q) = -1", s)
				}
			}
			again := FromText(tab.Text(), tab.Ends())
			for i, s := range tt.strs {
				if again.Number(s) != int32(i) {
					t.Fatalf("FromText: Number(%q) = %d, want %d", s, again.Number(s), i)
				}
			}
		})
	}
	// Of equal strings, the first.
	rep := New([]string{"a", "b", "a"})
	if n := rep.Number("a"); n != 0 {
		t.Errorf("Number of a repeated string = %d, want 0", n)
	}
}

func contains(strs []string, s string) bool {
	for _, x := range strs {
		if x == s {
			return true
		}
	}
	return false
}
