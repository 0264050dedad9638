// Package tokenize turns tool names, descriptions and queries into the
// lower-case word tokens that the lexical ranker and the local embedder share.
package tokenize

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Words splits s into lower-case tokens. Runs of letters and digits are
// tokens; everything else separates them. Identifiers are split where their
// case changes, so "createPullRequest", "create_pull_request",
// "create-pull-request" and "create.pull.request" all give
// [create pull request]. A run of capitals stays one token ("HTTPServer"
// gives [http server]).
func Words(s string) []string {
	var out []string
	AppendWords(s, func(w string) { out = append(out, w) })
	return out
}

// AppendWords calls emit for each token of s, in order, without building a
// slice. It is the allocation-light form of Words for hot paths.
func AppendWords(s string, emit func(string)) {
	if isASCII(s) {
		appendASCIIWords(s, emit)
		return
	}
	appendRuneWords(s, emit)
}

func appendRuneWords(s string, emit func(string)) {
	start := -1
	var prev rune
	var b strings.Builder
	flush := func(end int) {
		if start < 0 {
			return
		}
		b.Reset()
		b.Grow(end - start)
		for _, r := range s[start:end] {
			b.WriteRune(unicode.ToLower(r))
		}
		emit(b.String())
		start = -1
	}
	for i, r := range s {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			flush(i)
			prev = r
			continue
		}
		if start >= 0 && isBoundary(prev, r, s[i+utf8.RuneLen(r):]) {
			flush(i)
		}
		if start < 0 {
			start = i
		}
		prev = r
	}
	flush(len(s))
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// appendASCIIWords is AppendWords for ASCII text, the common case for
// queries: the same tokens, but a token already in lower case is emitted
// as a substring of s, without a copy.
func appendASCIIWords(s string, emit func(string)) {
	start, upper := -1, false
	flush := func(end int) {
		if start < 0 {
			return
		}
		w := s[start:end]
		if upper {
			w = strings.ToLower(w)
		}
		emit(w)
		start, upper = -1, false
	}
	var prev byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !isAlnum(c) {
			flush(i)
			prev = c
			continue
		}
		if start >= 0 && isASCIIBoundary(prev, c, s[i+1:]) {
			flush(i)
		}
		if start < 0 {
			start = i
		}
		upper = upper || isUpper(c)
		prev = c
	}
	flush(len(s))
}

func isUpper(c byte) bool { return 'A' <= c && c <= 'Z' }
func isLower(c byte) bool { return 'a' <= c && c <= 'z' }
func isDigit(c byte) bool { return '0' <= c && c <= '9' }
func isAlnum(c byte) bool { return isUpper(c) || isLower(c) || isDigit(c) }

// isASCIIBoundary is isBoundary for ASCII letters and digits.
func isASCIIBoundary(prev, cur byte, rest string) bool {
	switch {
	case (isLower(prev) || isDigit(prev)) && isUpper(cur):
		return true
	case isUpper(prev) && isUpper(cur):
		return rest != "" && isLower(rest[0])
	}
	return false
}

// isBoundary reports whether a new word starts at cur, given the rune before
// it and the text after it.
func isBoundary(prev, cur rune, rest string) bool {
	switch {
	case (unicode.IsLower(prev) || unicode.IsDigit(prev)) && unicode.IsUpper(cur):
		return true // camelCase, and the O of "getS3Object"
	case unicode.IsUpper(prev) && unicode.IsUpper(cur):
		// "HTTPServer": the S starts a word when a lower-case letter follows.
		next, _ := utf8.DecodeRuneInString(rest)
		return unicode.IsLower(next)
	case unicode.IsLetter(prev) && unicode.IsDigit(cur), unicode.IsDigit(prev) && unicode.IsLetter(cur):
		return false // keep "v2", "s3", "base64" whole: they are names
	}
	return false
}

// Identifier returns the words of a name joined by spaces:
// "list_pull_requests" gives "list pull requests".
func Identifier(name string) string {
	return strings.Join(Words(name), " ")
}

// Stem strips the commonest English inflections so that "files", "filed" and
// "filing" meet "file". It is deliberately light (no dictionary): a wrong
// merge costs precision in every query, a missed one only recall in a few.
func Stem(w string) string {
	n := len(w)
	if n <= 3 {
		return w
	}
	switch {
	case strings.HasSuffix(w, "ies") && n > 4:
		return w[:n-3] + "y"
	case strings.HasSuffix(w, "sses"):
		return w[:n-2]
	case strings.HasSuffix(w, "ing") && n > 5:
		return undouble(w[:n-3])
	case strings.HasSuffix(w, "ed") && n > 4 && !strings.HasSuffix(w, "eed"):
		return undouble(w[:n-2])
	case strings.HasSuffix(w, "es") && n > 4 && hasSibilantEnd(w[:n-2]):
		return w[:n-2]
	case strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") && !strings.HasSuffix(w, "us") && !strings.HasSuffix(w, "is"):
		return w[:n-1]
	}
	return w
}

func hasSibilantEnd(w string) bool {
	return strings.HasSuffix(w, "sh") || strings.HasSuffix(w, "ch") || strings.HasSuffix(w, "x") ||
		strings.HasSuffix(w, "ss") || strings.HasSuffix(w, "z")
}

// undouble turns "stopp" (from "stopped") back into "stop", but leaves
// "fill" and "pass" alone.
func undouble(w string) string {
	n := len(w)
	if n >= 3 && w[n-1] == w[n-2] && !strings.ContainsRune("lsz", rune(w[n-1])) && !strings.ContainsRune("aeiou", rune(w[n-1])) {
		return w[:n-1]
	}
	return w
}

// stop lists words too common in tool descriptions and queries to say
// anything about which tool is meant.
var stop = map[string]bool{
	"a": true, "an": true, "and": true, "are": true, "as": true, "at": true, "be": true, "by": true,
	"can": true, "do": true, "for": true, "from": true, "i": true, "if": true, "in": true, "into": true,
	"is": true, "it": true, "its": true, "me": true, "my": true, "of": true, "on": true, "or": true,
	"our": true, "please": true, "so": true, "that": true, "the": true, "their": true, "this": true,
	"to": true, "us": true, "was": true, "we": true, "what": true, "which": true, "will": true,
	"with": true, "you": true, "your": true, "would": true, "could": true, "should": true, "want": true,
	"need": true, "help": true, "like": true, "some": true, "any": true, "all": true, "about": true,
	"there": true, "these": true, "those": true, "them": true, "they": true, "have": true, "has": true,
	"been": true, "also": true, "just": true, "than": true, "then": true, "when": true, "where": true,
	"how": true, "who": true, "whom": true, "why": true,
	"assist": true, "provide": true, "provides": true, "information": true, "hi": true, "hey": true, "hello": true,
	"tell": true, "give": true, "know": true, "sort": true, "sorts": true, "kind": true, "kinds": true,
	"something": true, "anything": true, "really": true, "am": true, "im": true, "m": true,
}

// IsStop reports whether w (lower case) is a stop word.
func IsStop(w string) bool { return stop[w] }

// Terms returns the stemmed, stop-word-free tokens of s: the unit both
// rankers match on.
func Terms(s string) []string {
	out := make([]string, 0, len(s)/6+1) // about one term per six bytes of English
	AppendWords(s, func(w string) {
		if !stop[w] {
			out = append(out, Stem(w))
		}
	})
	return out
}
