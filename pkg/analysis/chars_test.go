package analysis

import (
	"strings"
	"testing"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// TestIsASCII: a byte past ASCII is found wherever it is, in the words of
// eight bytes or the tail after them.
func TestIsASCII(t *testing.T) {
	for n := range 20 {
		if !IsASCII(strings.Repeat("a", n)) {
			t.Errorf("%d ASCII bytes: not ASCII", n)
		}
		for i := range n {
			for _, c := range []byte{0x80, 0xC3, 0xFF} {
				b := []byte(strings.Repeat("a", n))
				b[i] = c
				if IsASCII(string(b)) {
					t.Errorf("%q: ASCII", b)
				}
			}
		}
	}
}

// TestRuneClasses holds the class table to the unicode package's own
// answers for every character it covers.
func TestRuneClasses(t *testing.T) {
	for r := range rune(classLimit) {
		for _, c := range []struct {
			class runeClass
			want  bool
		}{
			{classLetter, unicode.IsLetter(r)}, {classDigit, unicode.IsDigit(r)}, {classUpper, unicode.IsUpper(r)}, {classLower, unicode.IsLower(r)},
			{classMark, unicode.In(r, unicode.Mn, unicode.Mc, unicode.Me)},
		} {
			if got := hasClass(r, c.class); got != c.want {
				t.Errorf("%U class %b: %v, want %v", r, c.class, got, c.want)
			}
		}
		// What is not marked rewritten a token keeps as written.
		if !hasClass(r, classRewritten) && (unicode.ToLower(narrow(r)) != r || optional(r)) {
			t.Errorf("%U: not marked rewritten, but a token writes it anew", r)
		}
	}
}

// FuzzNormal holds the normal-form checks that skip inertPrefix to the
// normaliser's own answers.
func FuzzNormal(f *testing.F) {
	for _, s := range []string{"e\u0301", "\u0438\u0306", "\u0439", "caf\u00e9", "\u0915\u093c", "\u0958", "\ufb01le", "\uff21\u0301", "\u1100\u1161", "\u0627\u0653", "\u00c5\u030a", "a\u0300\u0316", "\xcc\x81", "\u0451\xff", "\u0e01\u0e49", "\uac00\u11a8", "\u7684\u0301", "\u8bfb\uff0c\u8bb0\u0301", "\uff41\u0301", "\u7684\u3000"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := isNormal(s), norm.NFKC.IsNormalString(s); got != want {
			t.Fatalf("%q: isNormal %v, the normaliser %v", s, got, want)
		}
		if got, want := isNFKC(s), quickNFKC(s, false); got != want {
			t.Fatalf("%q: isNFKC %v, read whole %v", s, got, want)
		}
	})
}

// TestNormalPairs: a character below classLimit followed by any other,
// the pairs where composition and reordering happen, is read normal or
// not as the normaliser reads it.
func TestNormalPairs(t *testing.T) {
	var firsts []rune
	for r := rune(0); r < classLimit; r += 29 { // every 29th, some 140
		firsts = append(firsts, r)
	}
	firsts = append(firsts, 'e', 'A', 0x438, 0x415, 0x3B1, 0x915, 0x627, 0x5D0, 0xC15, 0xB15, 0xB47, 0xD46, 0x7684, 0xAC00, 0xFF21, 0x3002, 0x304B, 0x30AB, 0x3000)
	// The seconds: what follows a letter up to the Hangul jamo, the other
	// blocks of combining marks, and fullwidth forms.
	for _, span := range [][2]rune{{0x80, 0x1200}, {0x1DC0, 0x1E00}, {0x20D0, 0x2100}, {0x3000, 0x3100}, {0xFF00, 0xFF60}} {
		for _, a := range firsts {
			for b := span[0]; b < span[1]; b++ {
				s := string(a) + string(b)
				if got, want := isNormal(s), norm.NFKC.IsNormalString(s); got != want {
					t.Fatalf("%q: isNormal %v, the normaliser %v", s, got, want)
				}
				if got, want := isNFKC(s), quickNFKC(s, false); got != want {
					t.Fatalf("%q: isNFKC %v, read whole %v", s, got, want)
				}
			}
		}
	}
}

// TestInertRanges: the characters inertPrefix passes, by the table or
// by range, are normal and start a segment.
func TestInertRanges(t *testing.T) {
	inert := nfkcInert()
	for r := range rune(inertLimit) {
		if inert[r>>6]&(1<<(r&63)) == 0 {
			continue
		}
		if c := string(r); !norm.NFKC.PropertiesString(c).BoundaryBefore() || !norm.NFKC.IsNormalString(c) {
			t.Fatalf("%U is not inert", r)
		}
	}
	for _, span := range [][2]rune{{0x4E00, 0x9FFF}, {0xAC00, 0xD7A3}} {
		for r := span[0]; r <= span[1]; r++ {
			c := string(r)
			if !norm.NFKC.PropertiesString(c).BoundaryBefore() || !norm.NFKC.IsNormalString(c) {
				t.Fatalf("%U is not inert", r)
			}
		}
	}
}
