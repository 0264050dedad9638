package search

import (
	"strings"
	"unicode"
	"unicode/utf8"
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
