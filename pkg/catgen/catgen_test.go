package catgen

import (
	"bytes"
	"strings"
	"testing"
	"unicode"

	"github.com/toolsearch/toolsearch/pkg/catalog"
)

func write(t *testing.T, sp Spec) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := sp.Write(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// read is the catalog data holds, which must be valid.
func read(t *testing.T, data []byte) *catalog.Catalog {
	t.Helper()
	part, err := catalog.Parse("gen.json", data, "")
	if err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.New([]catalog.Part{part})
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

// TestText: a longer text is a valid catalog of as many tools, about
// Text times the bytes, the same for the same seed; text 1 is text 0's
// catalog, which earlier measurements were made on.
func TestText(t *testing.T) {
	const n = 500
	plain := write(t, Spec{Tools: n, Seed: 3})
	for _, tt := range []struct {
		text     int
		min, max float64 // the catalog's size over text 0's
	}{
		{1, 1, 1},
		{2, 1.6, 2.4},
		{5, 3.5, 6},
	} {
		sp := Spec{Tools: n, Seed: 3, Text: tt.text}
		got := write(t, sp)
		if !bytes.Equal(got, write(t, sp)) {
			t.Errorf("text %d: the same seed wrote two catalogs", tt.text)
		}
		if r := float64(len(got)) / float64(len(plain)); r < tt.min || r > tt.max {
			t.Errorf("text %d: %.2f times text 0's bytes, want %.1f to %.1f", tt.text, r, tt.min, tt.max)
		}
		if cat := read(t, got); cat.Len() != n {
			t.Errorf("text %d: %d tools, want %d", tt.text, read(t, got).Len(), n)
		}
	}
	if err := (Spec{Tools: 1, Text: -1}).Write(new(bytes.Buffer)); err == nil {
		t.Error("text -1: no error")
	}
}

// TestScript: a Cyrillic catalog is the same tools, names and schema keys
// as the plain one, with descriptions in Cyrillic letters and no ASCII
// letter; an unknown script is an error.
func TestScript(t *testing.T) {
	const n = 300
	plain, cyr := read(t, write(t, Spec{Tools: n, Seed: 3})), read(t, write(t, Spec{Tools: n, Seed: 3, Script: "cyrillic"}))
	if plain.Len() != cyr.Len() {
		t.Fatalf("%d tools, want %d", cyr.Len(), plain.Len())
	}
	for i, pt := range plain.Tools() {
		ct := cyr.Tool(i)
		if ct.ID() != pt.ID() {
			t.Fatalf("tool %d: %s, want %s", i, ct.ID(), pt.ID())
		}
		if strings.ContainsFunc(ct.Description, func(r rune) bool { return r < 0x80 && unicode.IsLetter(r) }) || !strings.ContainsFunc(ct.Description, func(r rune) bool { return unicode.Is(unicode.Cyrillic, r) }) {
			t.Fatalf("%s: description %q is not in Cyrillic letters", ct.ID(), ct.Description)
		}
		if len(ct.Description) <= len(pt.Description) {
			t.Fatalf("%s: description of %d bytes, its letters 2 bytes each, against %d", ct.ID(), len(ct.Description), len(pt.Description))
		}
	}
	if err := (Spec{Tools: 1, Script: "greek"}).Write(new(bytes.Buffer)); err == nil {
		t.Error(`script "greek": no error`)
	}
}
