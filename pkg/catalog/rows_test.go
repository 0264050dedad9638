package catalog

import (
	"fmt"
	"slices"
	"testing"
)

// TestRowTableCollisions: rows whose keys hash alike, or share a key, are
// all found, in row order, and a probe stops at the first empty slot.
func TestRowTableCollisions(t *testing.T) {
	for _, n := range []int{1, 2, 7, 100} {
		tb := newRowTable(n)
		for row := range n {
			tb.add(42, row) // every row on one probe sequence
		}
		var got []int
		tb.each(42, func(r int) bool { got = append(got, r); return true })
		want := make([]int, n)
		for i := range want {
			want[i] = i
		}
		if !slices.Equal(got, want) {
			t.Errorf("n=%d: each = %v, want %v", n, got, want)
		}
		var first []int
		tb.each(42, func(r int) bool { first = append(first, r); return false })
		if len(first) != 1 || first[0] != 0 {
			t.Errorf("n=%d: each stopped early = %v, want [0]", n, first)
		}
	}
}

// TestSharedNames: a name many servers share resolves to none of them
// alone, each server/name resolves to its own row, and a catalog of many
// tools finds every one.
func TestSharedNames(t *testing.T) {
	var servers []Server
	for i := range 300 {
		servers = append(servers, Server{Name: fmt.Sprintf("s%d", i), Tools: []Tool{{Name: "search"}, {Name: fmt.Sprintf("only_%d", i)}}})
	}
	c, err := New([]Part{{Source: "a.json", Servers: servers}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Resolve("search"); err == nil {
		t.Error(`Resolve("search") shared by 300 servers: no error`)
	}
	if rows := c.named("search"); len(rows) != 300 || !slices.IsSorted(rows) {
		t.Errorf("named(search): %d rows, sorted %v", len(rows), slices.IsSorted(rows))
	}
	for i, tool := range c.Tools() {
		if r, ok := c.Lookup(tool.Server, tool.Name); !ok || r != i {
			t.Fatalf("Lookup(%s, %s) = %d, %v; want %d", tool.Server, tool.Name, r, ok, i)
		}
		if r, err := c.Resolve(tool.ID()); err != nil || r != i {
			t.Fatalf("Resolve(%s) = %d, %v; want %d", tool.ID(), r, err, i)
		}
	}
	if _, ok := c.Lookup("s1", "only_2"); ok {
		t.Error("Lookup found a tool in the wrong server")
	}
}
