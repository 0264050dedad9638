package analysis

import (
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
	"golang.org/x/text/unicode/rangetable"
)

// Words splits s into lower-case tokens. Runs of letters and digits are
// tokens; everything else separates them. Identifiers are split where their
// case changes, so "createPullRequest", "create_pull_request",
// "create-pull-request" and "create.pull.request" all give
// [create pull request]. A run of capitals stays one token ("HTTPServer"
// gives [http server]). Chinese, Japanese, Thai, Lao, Khmer and Burmese
// are written without spaces, and Korean words carry their particles, so
// a run of those scripts gives its overlapping pairs of characters
// ("发送消息" gives [发送 送消 消息]), or the one character of a run of one,
// as Lucene's CJK analyzer does: a query's words then match inside a
// description's. Combining marks stay with their letter (the vowel signs
// of Devanagari, Tamil or Thai; an accent written apart, read as NFC),
// but for those a writer may leave out (Arabic's and Hebrew's vowel
// points), and fullwidth letters and digits ("ＧｉｔＨｕｂ") read as the
// ASCII ones. Text is read as Fold writes it: no invisible character
// splits a word, compatibility characters read as what they stand for,
// and a Cyrillic or Greek letter among Latin ones as the Latin one it is
// drawn as.
func Words(s string) []string {
	var out []string
	AppendWords(s, func(w string) { out = append(out, w) })
	return out
}

// AppendWords calls emit for each token of s, in order, without building a
// slice. It is the allocation-light form of Words for hot paths.
func AppendWords(s string, emit func(string)) {
	if IsASCII(s) {
		appendASCIIWords(s, emit)
		return
	}
	appendRuneWords(s, emit)
}

func appendRuneWords(s string, emit func(string)) {
	s = fold(s, isNFKC)
	start := -1
	var prev rune
	var b strings.Builder
	flush := func(end int) {
		if start < 0 {
			return
		}
		if word := s[start:end]; readsAsWritten(word) {
			emit(word) // as the ASCII path does: no copy
			start = -1
			return
		}
		b.Reset()
		b.Grow(end - start)
		for _, r := range s[start:end] {
			if !optional(r) {
				b.WriteRune(unicode.ToLower(narrow(r)))
			}
		}
		if b.Len() > 0 { // a stretch of tatweel alone is no word
			emit(b.String())
		}
		start = -1
	}
	// A run of a script written without spaces gives its overlapping
	// pairs of characters, a character being a base and the marks that
	// follow it (Thai's vowels and tones): prior and last are where the
	// run's last two characters start, n how many it has had.
	prior, last, n := 0, 0, 0
	endRun := func(end int) {
		switch {
		case n == 1:
			emit(s[last:end])
		case n > 1:
			emit(s[prior:end])
		}
		n = 0
	}
	for i, orig := range s {
		r := narrow(orig)
		mark := isMark(r)
		switch {
		case mark && n > 0:
			continue // the character goes on
		case unspaced(r):
			flush(i)
			if n > 1 {
				emit(s[prior:i])
			}
			prior, last = last, i
			n++
			continue
		}
		endRun(i)
		if mark && start >= 0 {
			continue // a word's accent, a vowel sign of Devanagari or Tamil
		}
		if !hasClass(r, classLetter) && !hasClass(r, classDigit) {
			flush(i)
			prev = r
			continue
		}
		if start >= 0 && isBoundary(prev, r, s[i+utf8.RuneLen(orig):]) {
			flush(i)
		}
		if start < 0 {
			start = i
		}
		prev = r
	}
	endRun(len(s))
	flush(len(s))
}

// optional reports whether r is written or left out at the writer's
// choice, as accents are not: Arabic's short vowels and other harakat,
// its tatweel (a stretch of the line) and Hebrew's points. Words are read
// without them, as Lucene's Arabic and Hebrew normalisers read them, so
// that a query typed without them matches a description written with
// them.
func optional(r rune) bool {
	return 0x064B <= r && r <= 0x065F || r == 0x0670 || r == 0x0640 || 0x0591 <= r && r <= 0x05C7 && r != 0x05BE && r != 0x05C0 && r != 0x05C3 && r != 0x05C6
}

// readsAsWritten reports whether word is its own token: it has no letter
// to lower-case, mark to leave out or fullwidth form to narrow, as is the
// case of most words of a text in lower case. Only characters below
// classLimit are looked at; any other makes the word be written anew.
func readsAsWritten(word string) bool {
	for _, r := range word {
		if uint32(r) >= classLimit || runeClasses[r]&classRewritten != 0 {
			return false
		}
	}
	return true
}

// isMark reports whether r is a combining mark; none is under U+0300.
func isMark(r rune) bool { return r >= 0x300 && hasClass(r, classMark) }

// The classes of the characters below classLimit (Latin, Greek, Cyrillic,
// Armenian, Hebrew, Arabic, the Indic scripts), whose text reads a class or
// two of every character: a lookup each, where Unicode's range tables are
// searched (Words on Russian text 10.5 -> 5.3 µs).
type runeClass uint8

const (
	classLetter runeClass = 1 << iota
	classDigit
	classUpper
	classLower
	classMark
	// classRewritten marks what a token does not keep as written: a
	// letter of upper or title case, which may have a lower-case one,
	// and what optional leaves out.
	classRewritten
)

const classLimit = 0x1000

var runeClasses = classesBelowLimit()

func classesBelowLimit() (t [classLimit]runeClass) {
	// From the range tables themselves, not a search of them for each
	// character: about 3 µs at start-up, where asking unicode.IsLetter
	// and the rest of each character took 80 for the first 2,048.
	for _, c := range []struct {
		table *unicode.RangeTable
		class runeClass
	}{{unicode.L, classLetter}, {unicode.Nd, classDigit}, {unicode.Lu, classUpper | classRewritten}, {unicode.Lt, classRewritten}, {unicode.Ll, classLower}, {unicode.Mn, classMark}, {unicode.Mc, classMark}, {unicode.Me, classMark}} {
		for _, rg := range c.table.R16 {
			for r := rune(rg.Lo); r <= rune(rg.Hi) && r < classLimit; r += rune(rg.Stride) {
				t[r] |= c.class
			}
		}
	}
	for r := range rune(classLimit) {
		if optional(r) {
			t[r] |= classRewritten
		}
	}
	return t
}

// hasClass reports whether r is of class c, which must be one class.
func hasClass(r rune, c runeClass) bool {
	if uint32(r) < classLimit {
		return runeClasses[r]&c != 0
	}
	return hasClassBeyond(r, c)
}

// hasClassBeyond is hasClass for a character at or past classLimit: apart,
// so that hasClass is inlined.
func hasClassBeyond(r rune, c runeClass) bool {
	switch c {
	case classLetter:
		return unicode.IsLetter(r)
	case classDigit:
		return unicode.IsDigit(r)
	case classUpper:
		return unicode.IsUpper(r)
	case classLower:
		return unicode.IsLower(r)
	}
	return unicode.In(r, unicode.Mn, unicode.Mc, unicode.Me)
}

// Fold writes s as its reader sees it. Characters that are not seen (a
// soft hyphen, a zero-width space or joiner, a word joiner, a variation
// selector, a byte-order mark: Unicode's default-ignorable code points)
// are dropped, so "de\u00ADlete" is delete, whether an upstream's text
// carries them from a web page or to slip a word past a search. Then NFKC
// writes each compatibility character as what it stands for ("ﬁle" is
// file, "m²" m2, halfwidth katakana as fullwidth) and composes accents
// written apart ("cafe\u0301" is "café"), as ICU's search folding does.
// Last, in a word that has ASCII letters, a letter drawn as an ASCII one
// (a Cyrillic с, a Greek ο: Unicode's confusables) is written as that
// one (unmix). Text that needs none of these, the common case, is
// returned as it is. Words reads text so; Fold is for matching that is
// not by words.
func Fold(s string) string {
	if IsASCII(s) {
		return s // none of it applies: what Words' ASCII path relies on too
	}
	return fold(s, isNormal)
}

// isNormal reports whether NFKC leaves s as it is.
func isNormal(s string) bool { return norm.NFKC.IsNormalString(s[inertPrefix(s, false):]) }

// fold is Fold, with normal reporting whether NFKC leaves a text as it is.
func fold(s string, normal func(string) bool) string {
	if hasIgnorable(s) {
		s = dropIgnorables(s)
	}
	if !normal(s) {
		s = norm.NFKC.String(s)
	}
	if u := unmix(s); u != s {
		// A Latin letter now meets the marks its lookalike had: a
		// Cyrillic е and an acute, which NFKC leaves apart, are é once
		// the е is e, as "café" is typed.
		return norm.NFKC.String(u)
	}
	return s
}

// dropIgnorables is s without its default-ignorable code points, and
// otherwise byte for byte: invalid UTF-8 stays as it was, where
// strings.Map would write U+FFFD for it, which the normaliser reads
// otherwise (it takes "\xf1º" as one character, and "\ufffdº" as two,
// the second of them "o"), so that a soft hyphen would change the words.
func dropIgnorables(s string) string {
	ig := ignorables()
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); {
		if ig.lead[s[i]] {
			if r, size := utf8.DecodeRuneInString(s[i:]); ignorable(r) {
				i += size
				continue
			}
		}
		b = append(b, s[i])
		i++
	}
	return string(b)
}

// isNFKC reports whether NFKC would leave s as it is, but for fullwidth
// ASCII, which narrow reads as NFKC would: East Asian text is full of
// fullwidth punctuation, and copying it for that would double the cost of
// splitting it.
func isNFKC(s string) bool { return quickNFKC(s, true) }

// quickNFKC is isNFKC; with skip, each stretch it checks starts past its
// inert prefix, which spares the normaliser's trie and changes no answer
// (FuzzNormal holds the two).
func quickNFKC(s string, skip bool) bool {
	for {
		if skip {
			s = s[inertPrefix(s, true):]
		}
		n := norm.NFKC.QuickSpanString(s)
		if n == len(s) {
			return true
		}
		r, size := utf8.DecodeRuneInString(s[n:])
		if narrow(r) == r {
			// The quick check is not sure from here on (a letter that a
			// mark after it may compose with); the full one decides.
			return norm.NFKC.IsNormalString(s[n:])
		}
		s = s[n+size:]
	}
}

// inertPrefix is the length of the start of s that NFKC leaves as it is
// whatever follows, read a byte or a table lookup a character where the
// normaliser's quick check looks each up in its trie (a tenth of the
// build of a catalog written in Cyrillic letters): ASCII, and characters
// that are normal, start a segment and compose with nothing before them
// (inert); but for the last of those, which a mark after it may compose
// with ("e" and U+0301 are "é"). A text is normal if, and only if, what
// follows the prefix is, since it starts a segment. With fullwidth, the
// fullwidth forms of ASCII count as inert, as isNFKC reads them.
func inertPrefix(s string, fullwidth bool) int {
	inert := nfkcInert()
	last := 0 // where the last inert character starts
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			last = i
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case uint32(r) < inertLimit:
			if inert[r>>6]&(1<<(r&63)) == 0 {
				return last
			}
		case 0x4E00 <= r && r <= 0x9FFF, 0xAC00 <= r && r <= 0xD7A3:
			// Han's unified ideographs and Hangul's syllables are all
			// inert (TestInertRanges).
		case fullwidth && narrow(r) != r:
		default:
			return last
		}
		last = i
		i += size
	}
	return len(s)
}

// nfkcInert is, by bit, the characters below classLimit and of the
// block of East Asian punctuation and kana that are NFKC's own form and
// start a segment (inertPrefix); those between are not looked at, and
// read as not inert. It is made the first time a text that is not ASCII
// is read (about 0.4 ms), or by Warm, not at every start-up.
var nfkcInert = sync.OnceValue(func() *[inertLimit / 64]uint64 {
	var t [inertLimit / 64]uint64
	var b [utf8.UTFMax]byte
	for _, span := range [][2]rune{{0, classLimit}, {0x3000, inertLimit}} {
		for r := span[0]; r < span[1]; r++ {
			c := utf8.AppendRune(b[:0], r)
			if norm.NFKC.Properties(c).BoundaryBefore() && norm.NFKC.QuickSpan(c) == len(c) {
				t[r>>6] |= 1 << (r & 63)
			}
		}
	}
	return &t
})

const inertLimit = 0x3100

// ignorable reports whether r is a default-ignorable code point.
func ignorable(r rune) bool { return r >= 0xAD && unicode.Is(ignorables().table, r) }

// hasIgnorable reports whether s holds a default-ignorable code point. It
// decodes only the characters whose first byte such a code point may
// have, so that it costs little more than a scan of the bytes.
func hasIgnorable(s string) bool {
	ig := ignorables()
	for i := 0; i < len(s); i++ {
		if ig.lead[s[i]] {
			if r, _ := utf8.DecodeRuneInString(s[i:]); unicode.Is(ig.table, r) {
				return true
			}
		}
	}
	return false
}

// ignorableSet is a set of code points, and by byte whether one's UTF-8
// may begin with it.
type ignorableSet struct {
	table *unicode.RangeTable
	lead  [256]bool
}

// ignorables are the default-ignorable code points as Unicode derives
// them (DerivedCoreProperties.txt), from the tables of Go's Unicode
// version: the format characters, variation selectors and a few others,
// but for white space and the few format characters that are seen.
var ignorables = sync.OnceValue(func() (set ignorableSet) {
	var rs []rune
	for _, t := range []*unicode.RangeTable{unicode.Cf, unicode.Other_Default_Ignorable_Code_Point, unicode.Variation_Selector} {
		rangetable.Visit(t, func(r rune) {
			if !unicode.In(r, unicode.White_Space, unicode.Prepended_Concatenation_Mark) &&
				!(0xFFF9 <= r && r <= 0xFFFB) && !(0x13430 <= r && r <= 0x13440) {
				rs = append(rs, r)
				set.lead[utf8.AppendRune(nil, r)[0]] = true
			}
		})
	}
	set.table = rangetable.New(rs...)
	return set
})

// narrow folds the fullwidth form of an ASCII character, as East Asian
// input methods type them ("ＧｉｔＨｕｂ"), to that character.
func narrow(r rune) rune {
	if 0xFF01 <= r && r <= 0xFF5E {
		return r - 0xFEE0
	}
	return r
}

// unspaced reports whether r is of a script written without spaces
// between words: Han, Hiragana and Katakana (with the prolonged sound mark
// and the iteration mark), Thai, Lao, Khmer and Myanmar; or Hangul, whose
// words carry their particles.
func unspaced(r rune) bool {
	if r < 0x0E00 {
		return false
	}
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul,
		unicode.Thai, unicode.Lao, unicode.Khmer, unicode.Myanmar) || r == 'ー' || r == '々'
}

// IsASCII reports whether s is all ASCII: its words need no Unicode
// case mapping, and it has nothing to unaccent.
func IsASCII(s string) bool {
	// Eight bytes at a time, as utf8.ValidString reads them: every text
	// is asked this before it is read, and a regex search asks it of each
	// description it matches.
	for len(s) >= 8 {
		lo := uint32(s[0]) | uint32(s[1])<<8 | uint32(s[2])<<16 | uint32(s[3])<<24
		hi := uint32(s[4]) | uint32(s[5])<<8 | uint32(s[6])<<16 | uint32(s[7])<<24
		if (lo|hi)&0x80808080 != 0 {
			return false
		}
		s = s[8:]
	}
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
	case (hasClass(prev, classLower) || hasClass(prev, classDigit)) && hasClass(cur, classUpper):
		return true // camelCase, and the O of "getS3Object"
	case hasClass(prev, classUpper) && hasClass(cur, classUpper):
		// "HTTPServer": the S starts a word when a lower-case letter follows.
		next, _ := utf8.DecodeRuneInString(rest)
		return hasClass(narrow(next), classLower)
	case hasClass(prev, classLetter) && hasClass(cur, classDigit), hasClass(prev, classDigit) && hasClass(cur, classLetter):
		return false // keep "v2", "s3", "base64" whole: they are names
	}
	return false
}

// Identifier returns the words of a name joined by spaces:
// "list_pull_requests" gives "list pull requests".
func Identifier(name string) string {
	return strings.Join(Words(name), " ")
}
