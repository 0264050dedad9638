package catgen

import (
	"bytes"
	"testing"

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
		part, err := catalog.Parse("gen.json", got, "")
		if err != nil {
			t.Fatalf("text %d: %v", tt.text, err)
		}
		cat, err := catalog.New([]catalog.Part{part})
		if err != nil {
			t.Fatalf("text %d: %v", tt.text, err)
		}
		if cat.Len() != n {
			t.Errorf("text %d: %d tools, want %d", tt.text, cat.Len(), n)
		}
	}
	if err := (Spec{Tools: 1, Text: -1}).Write(new(bytes.Buffer)); err == nil {
		t.Error("text -1: no error")
	}
}
