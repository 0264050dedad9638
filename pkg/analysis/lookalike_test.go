package analysis

import (
	"testing"
	"unicode"
	"unicode/utf8"
)

// unmixEveryWord is unmix as its comment reads: every word of s, split as
// Words splits them, its letters' classes read one by one. unmix must
// give what it gives, reading only the words around ASCII letters.
func unmixEveryWord(s string) string {
	var b []byte
	done := 0
	start, ascii, other := -1, false, false
	end := func(i int) {
		if start >= 0 && ascii && other {
			b = appendUnmixed(append(b, s[done:start]...), s[start:i])
			done = i
		}
		start, ascii, other = -1, false, false
	}
	var prev rune
	for i, size := 0, 0; i < len(s); i += size {
		var r rune
		r, size = utf8.DecodeRuneInString(s[i:])
		if start >= 0 && isBoundary(prev, r, s[i+size:]) {
			end(i)
		}
		prev = r
		switch {
		case r < utf8.RuneSelf && (isLower(byte(r)) || isUpper(byte(r))):
			ascii = true
		case r >= utf8.RuneSelf && unicode.IsLetter(r):
			other = true
		case unicode.IsDigit(r) || isMark(r):
		default:
			end(i)
			continue
		}
		if start < 0 {
			start = i
		}
	}
	end(len(s))
	if b == nil {
		return s
	}
	return string(append(b, s[done:]...))
}

// FuzzUnmix holds unmix to unmixEveryWord.
func FuzzUnmix(f *testing.F) {
	for _, s := range []string{
		"d\u0435lete_rows", "\u0441reate_issue", "\u0441\u043e\u0440", "\u043f\u043e\u043b\u0443\u0447\u0438\u0442\u044cUser",
		"User\u043f\u043e\u043b\u0443\u0447\u0438\u0442\u044c", "get\u0405erver", "HTTP\u0405erver", "a\u0301\u0435", "x2\u0435", "\u0662\u0435a",
		"\u0421\u043e\u0437\u0434\u0430\u0442\u044c \u0437\u0430\u043f\u0440\u043e\u0441 \u0432 GitHub.", "r\u0435ad \u0430nd writ\u0435", "\xd0a\u0435", "a\xff\u0435", "\u0435",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := unmix(s), unmixEveryWord(s); got != want {
			t.Fatalf("%q: %q, want %q", s, got, want)
		}
	})
}
