package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// rows is a table's lines without its comment header.
func rows(text string) []string {
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(text), "\n") {
		if !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out
}

func TestRun(t *testing.T) {
	var out bytes.Buffer
	hyper := filepath.Join(t.TempDir(), "hypernyms.tsv")
	words := filepath.Join(t.TempDir(), "words.tsv")
	if err := run([]string{"-wordnet", "testdata/wordnet", "-hypernyms", hyper, "-words", words}, &out); err != nil {
		t.Fatal(err)
	}
	// delete/deletion both ways (only the pointer's own words: not erase),
	// historical/history (a pertainym), no multi-word lemma, no semantic
	// (0000) pointer.
	want := []string{"delete\tdeletion", "deletion\tdelete", "historical\thistory", "history\thistorical"}
	if got := slices.Sorted(slices.Values(rows(out.String()))); !slices.Equal(got, want) {
		t.Errorf("relations:\n%q\nwant:\n%q", got, want)
	}
	// The synsets above first senses, numbered in database order, each
	// with its hypernyms and words, then each word's first-sense
	// hypernyms. headache's second sense (worry) is not a first sense, so
	// it is not there; history has nothing above it, so it is left out.
	b, err := os.ReadFile(hyper)
	if err != nil {
		t.Fatal(err)
	}
	want = []string{
		"@0\t1\tache aching", "@1\t2\tpain hurting", "@2\t3\tsymptom", "@3\t4\tevidence", "@4\t\tinformation", "@5\t\tremove",
		"ache\t1", "delete\t5", "headache\t0",
	}
	if got := rows(string(b)); !slices.Equal(got, want) {
		t.Errorf("hypernyms:\n%q\nwant:\n%q", got, want)
	}
	// Every synset's words, and the exception lists' forms and bases
	// (took, children, better), once each.
	b, err = os.ReadFile(words)
	if err != nil {
		t.Fatal(err)
	}
	want = []string{"ache", "aching", "best", "better", "build", "built", "child", "children", "delete", "deletion", "erase",
		"evidence", "geese", "good", "goose", "headache", "historical", "history", "hurting", "information", "pain", "remove",
		"symptom", "take", "took", "well", "worry"}
	if got := rows(string(b)); !slices.Equal(got, want) {
		t.Errorf("words:\n%q\nwant:\n%q", got, want)
	}
	if err := run([]string{"-wordnet", "testdata/none"}, &out); err == nil || !strings.Contains(err.Error(), "wordnet-base") {
		t.Errorf("a missing database: err = %v, want one naming the Debian package", err)
	}
}
