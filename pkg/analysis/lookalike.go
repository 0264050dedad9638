package analysis

import (
	"sort"
	"unicode/utf8"
)

// lookalikePair is a letter of a script other than Latin and the ASCII
// letter it is drawn as (lookalike_table.go).
type lookalikePair struct {
	from rune
	to   byte
}

// lookalike is the ASCII letter r is drawn as (Cyrillic а, Greek ο,
// Armenian օ), or 0.
func lookalike(r rune) byte {
	if r < lookalikes[0].from || r > lookalikes[len(lookalikes)-1].from || !lookalikeIndex.blocks[r>>7] {
		return 0
	}
	i := sort.Search(len(lookalikes), func(i int) bool { return lookalikes[i].from >= r })
	if i < len(lookalikes) && lookalikes[i].from == r {
		return lookalikes[i].to
	}
	return 0
}

// IsLookalike reports whether r is a letter of another script than Latin
// that is drawn as an ASCII one, which Fold writes as that one in a word
// with ASCII letters.
func IsLookalike(r rune) bool { return lookalike(r) != 0 }

// unmix writes as ASCII the letters of other scripts in s that are drawn
// as ASCII ones, in each word that has an ASCII letter: "сreate" with a
// Cyrillic с is create to its reader, and an upstream that names a tool
// so slips it past a search for "create", and past the check for
// destructive verbs. A word with no ASCII letter is left as it is,
// Russian or Greek, though some of its letters look like ASCII ones: only
// a word that mixes them is read as the one it looks like. s is returned
// as it is when no word mixes.
//
// Only the words around ASCII letters are read, and only those that go on
// past them into other characters: each character of the rest is a byte
// compared, where reading every word (its letters' classes, camelCase)
// took Words on Russian text from 10.5 to 15.5 µs.
func unmix(s string) string {
	if !hasLookalike(s) {
		return s
	}
	var b []byte // s rewritten up to done, once a word mixes
	done := 0
	for i := 0; i < len(s); {
		if !isLower(s[i]) && !isUpper(s[i]) {
			i++
			continue
		}
		j := i + 1
		for j < len(s) && (isLower(s[j]) || isUpper(s[j]) || isDigit(s[j])) {
			j++
		}
		// An ASCII run between ASCII characters that end words (a space,
		// "_", ".") is a word of its own, and mixes nothing.
		lo, hi := i, j
		for lo > 0 {
			r, size := utf8.DecodeLastRuneInString(s[:lo])
			if !inWord(r) {
				break
			}
			lo -= size
		}
		for hi < len(s) {
			r, size := utf8.DecodeRuneInString(s[hi:])
			if !inWord(r) {
				break
			}
			hi += size
		}
		if lo < i || hi > j {
			b, done = appendMixedWords(b, s, done, lo, hi)
		}
		i = hi
	}
	if b == nil {
		return s
	}
	return string(append(b, s[done:]...))
}

// inWord reports whether r continues a word: a letter, a digit or a mark.
func inWord(r rune) bool {
	if r < utf8.RuneSelf {
		c := byte(r)
		return isLower(c) || isUpper(c) || isDigit(c)
	}
	return hasClass(r, classLetter) || hasClass(r, classDigit) || isMark(r)
}

// appendMixedWords reads s[lo:hi], a run of letters, digits and marks,
// word by word (split as Words splits them, camelCase too: a Russian word
// in "получитьUser" is not mixed with the English one), and for each word
// with an ASCII letter and a letter drawn as one, appends to b what of s
// is not yet in it (from done) and the word with those letters written as
// ASCII. It returns b and where s is now written up to.
func appendMixedWords(b []byte, s string, done, lo, hi int) ([]byte, int) {
	start := lo
	ascii, other := false, false
	end := func(i int) {
		if ascii && other {
			b = appendUnmixed(append(b, s[done:start]...), s[start:i])
			done = i
		}
		start, ascii, other = i, false, false
	}
	var prev rune
	for i, size := lo, 0; i < hi; i += size {
		var r rune
		r, size = utf8.DecodeRuneInString(s[i:])
		if i > start && isBoundary(prev, r, s[i+size:]) {
			end(i)
		}
		prev = r
		if r < utf8.RuneSelf {
			ascii = ascii || !isDigit(byte(r))
		} else if lookalike(r) != 0 {
			// Another letter changes nothing: the word is written anew
			// only when it would read otherwise.
			other = true
		}
	}
	end(hi)
	return b, done
}

// appendUnmixed appends word to b with each letter that is drawn as an
// ASCII one written as that one.
func appendUnmixed(b []byte, word string) []byte {
	for _, r := range word {
		if c := lookalike(r); c != 0 {
			b = append(b, c)
		} else {
			b = utf8.AppendRune(b, r)
		}
	}
	return b
}

// hasLookalike reports whether s holds a letter drawn as an ASCII one. It
// decodes only the characters whose first byte such a letter may have,
// none of which is Chinese, Japanese or an Indic script's.
func hasLookalike(s string) bool {
	set := lookalikeIndex
	for i := 0; i < len(s); i++ {
		if set.lead[s[i]] {
			if r, _ := utf8.DecodeRuneInString(s[i:]); lookalike(r) != 0 {
				return true
			}
		}
	}
	return false
}

// lookalikeSet is where the table's letters are: by byte, whether the
// UTF-8 of one may begin with it, and by block of 128 code points, whether
// one is in it. The blocks keep text of other letters, and the
// punctuation that shares their first byte (a dash, a quotation mark), from
// searching the table.
type lookalikeSet struct {
	lead   [256]bool
	blocks [0x20000 >> 7]bool
}

// lookalikeIndex is built at start-up, in about a microsecond: a sync.Once
// would cost a check on every character looked up.
var lookalikeIndex = func() *lookalikeSet {
	set := new(lookalikeSet)
	for _, p := range lookalikes {
		set.lead[utf8.AppendRune(nil, p.from)[0]] = true
		set.blocks[p.from>>7] = true
	}
	return set
}()
