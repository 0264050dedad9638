package analysis

import "strings"

// Stem strips English inflections, so that "files", "filed" and "filing"
// meet "file". It is steps 1 and 5 of Porter's algorithm (M.F. Porter, "An
// algorithm for suffix stripping", 1980): plural and tense endings, then
// the final e and y a word spells differently under inflection, so that
// every inflection of a word gets one stem ("movie", "movies": movi;
// "close", "closed", "closing": close; "specify", "specified": specifi).
// A stemmer that strips endings without those two rules disagrees with
// itself ("movies" to movy, "movie" to movie) and measured worse on every
// shared eval set (evals/README.md). Derivational suffixes (-ation, -ize,
// -ness) are left alone: merging them joins words that name different
// jobs (organ, organization), and a full Snowball stemmer measured worse.
// Two refinements come from Snowball's English stemmer (Porter2): its
// list of words that only look inflected ("news", "bias"), and -ies after
// a single letter ("lies": lie).
// Words other than lower-case ASCII letters are returned unchanged.
func Stem(w string) string {
	if len(w) <= 2 || !lowerASCII(w) {
		return w
	}
	if s, ok := exceptions[w]; ok {
		return s
	}
	w = stemPlural(w)
	w = stemTense(w)
	if n := len(w); n > 2 && w[n-1] == 'y' && consonant(w, n-2) {
		w = w[:n-1] + "i" // Porter 1c, as Snowball words it: "cry", not "day"
	}
	if s, ok := strings.CutSuffix(w, "e"); ok {
		if m := measure(s); m > 1 || m == 1 && !shortSyllable(s) {
			w = s
		}
	}
	if measure(w) > 1 && strings.HasSuffix(w, "ll") {
		w = w[:len(w)-1]
	}
	return w
}

// exceptions are the words Snowball's English stemmer (Porter2) treats
// specially whose endings steps 1 and 5 would take: "news" is not the
// plural of "new", nor "bias" of "bia"; "outing" and "herring" are not
// "out" and "her" doing something; "dying" is "die" doing something. Each
// maps to its stem, most to themselves.
var exceptions = map[string]string{
	"news": "news", "howe": "howe", "atlas": "atlas", "cosmos": "cosmos", "bias": "bias", "andes": "andes",
	"sky": "sky", "skies": "sky", "skis": "ski",
	"dying": "die", "lying": "lie", "tying": "tie",
	"inning": "inning", "outing": "outing", "canning": "canning", "herring": "herring", "earring": "earring",
	"proceed": "proceed", "exceed": "exceed", "succeed": "succeed",
}

// stemPlural is Porter's step 1a. Words of three letters ("gas", "bus")
// and the endings -us and -is ("status", "analysis") keep their s.
func stemPlural(w string) string {
	switch {
	case len(w) <= 3:
	case strings.HasSuffix(w, "sses"):
		return w[:len(w)-2]
	case strings.HasSuffix(w, "ies"):
		return ies(w)
	case strings.HasSuffix(w, "ss"), strings.HasSuffix(w, "us"), strings.HasSuffix(w, "is"):
	case strings.HasSuffix(w, "s"):
		return w[:len(w)-1]
	}
	return w
}

// ies stems a word ending in -ies or -ied as Snowball's English stemmer
// does: to -i after two letters or more ("cries", "specified": cri,
// specifi, as "cry" and "specify" stem), else to -ie ("lies", "tied": lie,
// tie), where Porter's "li" would part them from "lie".
func ies(w string) string {
	if len(w) > 4 {
		return w[:len(w)-2]
	}
	return w[:len(w)-1]
}

// stemTense is Porter's step 1b: -ed and -ing go when a vowel is left
// ("thing" and "need" stay), and the stem is then spelt as its plain form
// would be ("hoped" to hope, "stopped" to stop). Unlike Porter's, -ing
// must leave three letters: "using", "being" and "going" are nearly
// function words, and as "us", "be" and "go" they would meet unrelated
// words.
func stemTense(w string) string {
	var s string
	switch {
	case strings.HasSuffix(w, "ied"):
		return ies(w)
	case strings.HasSuffix(w, "eed"):
		if measure(w[:len(w)-3]) > 0 {
			return w[:len(w)-1]
		}
		return w
	case strings.HasSuffix(w, "ed") && hasVowel(w[:len(w)-2]):
		s = w[:len(w)-2]
	case strings.HasSuffix(w, "ing") && len(w) > 5 && hasVowel(w[:len(w)-3]):
		s = w[:len(w)-3]
	default:
		return w
	}
	n := len(s)
	switch {
	case strings.HasSuffix(s, "at"), strings.HasSuffix(s, "bl"), strings.HasSuffix(s, "iz"):
		return s + "e"
	case n >= 2 && s[n-1] == s[n-2] && consonant(s, n-1) && !strings.ContainsRune("lsz", rune(s[n-1])):
		return s[:n-1]
	case measure(s) == 1 && shortSyllable(s):
		return s + "e"
	}
	return s
}

// consonant reports whether w[i] is a consonant in Porter's sense: y is
// one after a vowel or at the start.
func consonant(w string, i int) bool {
	switch w[i] {
	case 'a', 'e', 'i', 'o', 'u':
		return false
	case 'y':
		return i == 0 || !consonant(w, i-1)
	}
	return true
}

// measure is Porter's m: how many vowel-consonant runs w has.
func measure(w string) int {
	m, i, n := 0, 0, len(w)
	for i < n && consonant(w, i) {
		i++
	}
	for i < n {
		for i < n && !consonant(w, i) {
			i++
		}
		if i == n {
			break
		}
		for i < n && consonant(w, i) {
			i++
		}
		m++
	}
	return m
}

func hasVowel(w string) bool {
	for i := range len(w) {
		if !consonant(w, i) {
			return true
		}
	}
	return false
}

// shortSyllable is Porter's *o: w ends consonant, vowel, consonant, the last
// not w, x or y ("hop", "clos").
func shortSyllable(w string) bool {
	n := len(w)
	return n >= 3 && consonant(w, n-3) && !consonant(w, n-2) && consonant(w, n-1) && !strings.ContainsRune("wxy", rune(w[n-1]))
}

func lowerASCII(w string) bool {
	for i := range len(w) {
		if w[i] < 'a' || w[i] > 'z' {
			return false
		}
	}
	return true
}
