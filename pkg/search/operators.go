package search

import (
	"bytes"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/toolsearch/toolsearch/pkg/analysis"
	"github.com/toolsearch/toolsearch/pkg/catalog"
)

// parsedQuery is a query with its operators taken out.
type parsedQuery struct {
	text string // what is ranked: the query without "+" marks
	// ask is text's start that is the request when the rest is context:
	// a conversation's earlier turns' words, or what a long text pasted
	// before its last paragraph (digest); empty otherwise.
	ask      string
	required []string // "+term": lowerFold'ed, must appear in the tool's name or description
	selected []string // "select:a,b": exactly these tools, no ranking
	isSelect bool
}

// MaxRequiredTerms bounds a query's "+term"s. 1,300 of them in a
// 4,096-byte query made a keyword search at 100,000 tools 0.39 s.
const MaxRequiredTerms = 16

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
			// Each is tested against every row in scope: a term given
			// again is dropped, and past MaxRequiredTerms no more are
			// kept (Search refuses the query then).
			term := lowerFold(strings.TrimLeft(w, "+"))
			if term != "" && len(p.required) <= MaxRequiredTerms && !slices.Contains(p.required, term) {
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

// termMatcher tests "+term"s against tools' texts. Texts are not kept
// lower-cased (11 MB at 100,000 tools): the matcher lower-cases one tool's
// at a time into a buffer it reuses, once for all of a query's terms.
type termMatcher struct {
	of    *catalog.Tool // whose text buf holds
	buf   []byte
	plain []byte // buf without accents (analysis.AppendUnaccented), once asked
	ascii bool   // buf is ASCII, so plain would be buf
}

// holds reports whether t's "server/name description", lower-cased,
// contains term (lower-case), as "+term" asks; an ASCII term also matches
// the text without its accents, as a query's words do (+echeance holds
// for "échéance").
func (m *termMatcher) holds(t *catalog.Tool, term string) bool {
	if m.of != t {
		m.of, m.plain = t, m.plain[:0]
		m.buf, m.ascii = appendLower(m.buf[:0], t)
	}
	if bytes.Contains(m.buf, []byte(term)) {
		return true
	}
	if m.ascii || !analysis.IsASCII(term) {
		return false
	}
	if len(m.plain) == 0 {
		m.plain = analysis.AppendUnaccented(m.plain, string(m.buf))
	}
	return bytes.Contains(m.plain, []byte(term))
}

// appendLower appends t's "server/name description" as lowerFold writes
// it: byte by byte while it is ASCII, by lowerFold once it is not; and
// reports whether it was ASCII.
func appendLower(dst []byte, t *catalog.Tool) ([]byte, bool) {
	start := len(dst)
	for _, part := range [...]string{t.Server, "/", t.Name, " ", t.Description} {
		for i := 0; i < len(part); i++ {
			c := part[i]
			if c >= utf8.RuneSelf {
				return append(dst[:start], lowerFold(t.ID()+" "+t.Description)...), false
			}
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			dst = append(dst, c)
		}
	}
	return dst, true
}

// lowerFold is s lower-cased as its reader sees it (analysis.Fold), so
// that "+delete" holds for "de\u00ADlete" as the word delete does.
func lowerFold(s string) string { return strings.ToLower(analysis.Fold(s)) }
