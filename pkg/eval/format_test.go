package eval

import (
	"bytes"
	"encoding/xml"
	"regexp"
	"strings"
	"testing"
)

// reportOf is a report whose every caller- or upstream-written text is s:
// case ids, categories, queries and tool names.
func reportOf(s string) *Report {
	return &Report{
		K:           10,
		Categories:  []CategoryReport{{Category: s}},
		Regressions: []Regression{{Case: s, Category: s, Tool: s, Was: 1, Now: 3}},
		Misses:      []Miss{{Case: s, Category: s, Query: s, Expected: s, Rank: 12, Top: []string{s, "github/" + s}}},
		Cases:       []CaseResult{{ID: s, Category: s, Expected: 1}},
	}
}

// tableRows checks that every row of every table in md has as many cell
// separators as its delimiter row: a text that ended its cell, or its
// row, would add or lose some.
func tableRows(t *testing.T, md string) {
	t.Helper()
	pipes := func(line string) int {
		n := 0
		for i := 0; i < len(line); i++ {
			if line[i] == '|' && (i == 0 || line[i-1] != '\\') {
				n++
			}
		}
		return n
	}
	want := 0
	for _, line := range strings.Split(md, "\n") {
		switch {
		case strings.HasPrefix(line, "|---"):
			want = pipes(line)
		case line == "":
			want = 0
		case want > 0 && pipes(line) != want:
			t.Errorf("a row of %d separators in a table of %d: %q", pipes(line), want, line)
		}
	}
}

// unescaped reports whether bad is in text other than right after a
// backslash, which shows its first character as written.
func unescaped(text, bad string) bool {
	for i := strings.Index(text, bad); i >= 0; {
		if i == 0 || text[i-1] != '\\' {
			return true
		}
		j := strings.Index(text[i+1:], bad)
		if j < 0 {
			return false
		}
		i += 1 + j
	}
	return false
}

// codeSpan is a code span fenced by one backtick.
var codeSpan = regexp.MustCompile("`[^`]*`")

// TestMarkdownKeepsTablesWhole: text with Markdown's own characters is
// shown as written, inside its cell; a tool name with backticks stays one
// code span.
func TestMarkdownKeepsTablesWhole(t *testing.T) {
	for _, s := range []string{
		"plain",
		"a | b",
		`ends in a backslash\`,
		`a \| b`,
		"[click](https://example.com) <img src=x> **bold**",
		"line one\nline two\rthree",
		"`tick` and ``two``",
		"`",
	} {
		var b bytes.Buffer
		if err := Write(&b, reportOf(s), "markdown", s); err != nil {
			t.Fatal(err)
		}
		md := b.String()
		tableRows(t, md)
		text := codeSpan.ReplaceAllString(md, "") // a code span shows its text as it is
		for _, bad := range []string{"[click](", "<img", "**bold**", "\nline two", "\rthree"} {
			if unescaped(text, bad) {
				t.Errorf("%q: %q is in the report unescaped:\n%s", s, bad, md)
			}
		}
	}
}

// FuzzMarkdown: no text in a report, however written, breaks a table of
// the Markdown report, and the JUnit report stays well-formed XML.
func FuzzMarkdown(f *testing.F) {
	f.Add("a | b")
	f.Add("``|`\\")
	f.Add("x\r\ny<>&")
	f.Fuzz(func(t *testing.T, s string) {
		var md, junit bytes.Buffer
		if err := Write(&md, reportOf(s), "markdown", s); err != nil {
			t.Fatal(err)
		}
		tableRows(t, md.String())
		if err := Write(&junit, reportOf(s), "junit", s); err != nil {
			t.Fatal(err)
		}
		d := xml.NewDecoder(&junit)
		for {
			if _, err := d.Token(); err != nil {
				if err.Error() != "EOF" {
					t.Fatalf("JUnit report is not XML: %v", err)
				}
				break
			}
		}
	})
}
