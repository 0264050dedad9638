package analysis

import (
	"maps"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// spelledOut are letters that carry no combining mark to drop but are
// written without accents in other letters.
var spelledOut = map[rune]string{'ß': "ss", 'æ': "ae", 'œ': "oe", 'ø': "o", 'ł': "l", 'đ': "d", 'ð': "d", 'þ': "th", 'ı': "i"}

// Unaccented returns the term that term, a term of a text, would have
// been had its word been typed without accents, as people often type
// words of French, Spanish or German ("impayées" is impaye, "straße"
// strass, as the query words "impayees" and "strasse" analyse); false when
// term is ASCII already, or has a letter with no unaccented ASCII form, or
// would be a stop word or a single letter unaccented. It reads Terms' stem
// and stop words but not its memo, which is the queries'.
//
// A query's word is unaccented only when the catalog lacks it as it is
// and the query is not Vietnamese (bm25.Index.Correct): there a word's
// marks are its meaning, and Vietnamese queries unaccented met unrelated
// English words ("sân bay", an airport, as San and bay).
func (a *Analyzer) Unaccented(term string) (string, bool) {
	if IsASCII(term) {
		return "", false
	}
	plain := string(AppendUnaccented(make([]byte, 0, len(term)), term))
	if !IsASCII(plain) {
		return "", false
	}
	var out string
	n := 0
	AppendWords(plain, func(w string) {
		if n++; n == 1 && !a.stop[w] {
			out = a.stem(w)
		}
	})
	if n != 1 || len(out) < 2 {
		return "", false
	}
	return out, true
}

// AppendUnaccented appends s to dst with each Latin letter that has
// accents written without them ("é" as e, "ß" as ss, "ł" as l, "ệ" as e)
// and combining marks dropped; every other character as it is.
func AppendUnaccented(dst []byte, s string) []byte {
	letters := unaccentedLetters()
	for _, r := range s {
		switch a, ok := letters[r]; {
		case r < utf8.RuneSelf:
			dst = append(dst, byte(r))
		case ok:
			dst = append(dst, a...)
		case unicode.Is(unicode.Mn, r):
		default:
			dst = utf8.AppendRune(dst, r)
		}
	}
	return dst
}

// unaccentedLetters maps the letters of Latin-1, Latin Extended-A and B
// and Latin Extended Additional that are an ASCII letter with marks (by
// their canonical decomposition), and spelledOut's, to ASCII.
var unaccentedLetters = sync.OnceValue(func() map[rune]string {
	m := maps.Clone(spelledOut)
	for _, block := range [...][2]rune{{0xC0, 0x24F}, {0x1E00, 0x1EFF}} {
		for r := block[0]; r <= block[1]; r++ {
			d := norm.NFD.String(string(r))
			base, n := utf8.DecodeRuneInString(d)
			if base >= utf8.RuneSelf || n == len(d) || !unicode.IsLetter(base) {
				continue
			}
			if !strings.ContainsFunc(d[n:], func(c rune) bool { return !unicode.Is(unicode.Mn, c) }) {
				m[r] = string(base)
			}
		}
	}
	return m
})

// Vietnamese reports whether term has a letter only Vietnamese writes:
// ă, đ, ơ, ư, or a vowel with a tone mark over another mark (U+1EA0 to
// U+1EF9).
func Vietnamese(term string) bool {
	for _, r := range term {
		switch {
		case r == 'ă', r == 'đ', r == 'ơ', r == 'ư', r >= 0x1EA0 && r <= 0x1EF9:
			return true
		}
	}
	return false
}
