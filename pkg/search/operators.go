package search

import (
	"bytes"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/toolsearch/toolsearch/pkg/catalog"
)

// parsedQuery is a query with its operators taken out.
type parsedQuery struct {
	text     string   // what is ranked: the query without "+" marks
	required []string // "+term": lower-cased, must appear in the tool's name or description
	selected []string // "select:a,b": exactly these tools, no ranking
	isSelect bool
}

// parseQuery reads the operators agents already use in SDK tool routers:
// a query "select:name1,name2" names tools outright, and "+term" makes a
// term required. Only a "+" followed by a letter is an operator: "+49 151"
// is a phone number and "C++" a language, and neither may empty a result.
func parseQuery(q string) parsedQuery {
	trimmed := strings.TrimSpace(q)
	if rest, ok := cutPrefixFold(trimmed, "select:"); ok {
		var names []string
		for _, n := range strings.Split(rest, ",") {
			if n = strings.TrimSpace(n); n != "" {
				names = append(names, n)
			}
		}
		return parsedQuery{selected: names, isSelect: true}
	}
	var p parsedQuery
	if plain(trimmed) {
		p.text = trimmed // what the join below would give, without its copies
		return p
	}
	words := strings.Fields(trimmed)
	for i, w := range words {
		if r, _ := utf8.DecodeRuneInString(strings.TrimLeft(w, "+")); len(w) > 1 && w[0] == '+' && unicode.IsLetter(r) {
			term := strings.ToLower(strings.TrimLeft(w, "+"))
			if term != "" {
				p.required = append(p.required, term)
			}
			words[i] = strings.TrimLeft(w, "+")
		}
	}
	p.text = strings.Join(words, " ")
	return p
}

// plain reports whether s has no operator and no whitespace but single
// ASCII spaces (so its words joined by spaces are s itself).
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '+', c >= utf8.RuneSelf, c == '\t', c == '\n', c == '\v', c == '\f', c == '\r':
			return false
		case c == ' ' && i+1 < len(s) && s[i+1] == ' ':
			return false
		}
	}
	return true
}

func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix) {
		return s[len(prefix):], true
	}
	return s, false
}

// termMatcher tests "+term"s against tools' texts, reusing one buffer.
type termMatcher struct{ buf []byte }

// holds reports whether t's "server/name description", lower-cased,
// contains term (lower-case), as "+term" asks. Texts are not kept
// lower-cased (11 MB at 100,000 tools): an ASCII text is lower-cased into
// the matcher's buffer, part by part, and searched there as strings.Contains
// would search it whole (a term with no "/" or space cannot span parts);
// any other text, or a term that could span parts, is lower-cased whole.
func (m *termMatcher) holds(t *catalog.Tool, term string) bool {
	if strings.ContainsAny(term, "/ ") || !isASCII(t.Server) || !isASCII(t.Name) || !isASCII(t.Description) {
		return strings.Contains(strings.ToLower(t.ID()+" "+t.Description), term)
	}
	for _, part := range [...]string{t.Name, t.Description, t.Server} {
		m.buf = appendLowerASCII(m.buf[:0], part)
		if bytes.Contains(m.buf, []byte(term)) {
			return true
		}
	}
	return false
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// appendLowerASCII appends s, ASCII, with its capitals lowered.
func appendLowerASCII(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
}
