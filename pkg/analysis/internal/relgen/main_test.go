package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	var out bytes.Buffer
	if err := run([]string{"-wordnet", "testdata/wordnet"}, &out); err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if !strings.HasPrefix(l, "#") {
			rows = append(rows, l)
		}
	}
	// delete/deletion both ways (only the pointer's own words: not erase),
	// historical/history (a pertainym), no multi-word lemma, no semantic
	// (0000) pointer.
	want := []string{"delete\tdeletion", "deletion\tdelete", "historical\thistory", "history\thistorical"}
	if got := slices.Sorted(slices.Values(rows)); !slices.Equal(got, want) {
		t.Errorf("relations:\n%q\nwant:\n%q", got, want)
	}
	if err := run([]string{"-wordnet", "testdata/none"}, &out); err == nil || !strings.Contains(err.Error(), "wordnet-base") {
		t.Errorf("a missing database: err = %v, want one naming the Debian package", err)
	}
}
