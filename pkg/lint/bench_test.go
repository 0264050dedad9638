package lint

import (
	"bytes"
	"testing"

	"github.com/toolsearch/toolsearch/pkg/catalog"
	"github.com/toolsearch/toolsearch/pkg/catgen"
)

// BenchmarkCheck lints 10,000 generated tools without vectors: the
// catalog report (the console's catalog view) runs it on every request.
func BenchmarkCheck(b *testing.B) {
	var buf bytes.Buffer
	if err := (catgen.Spec{Tools: 10_000, Seed: 1}).Write(&buf); err != nil {
		b.Fatal(err)
	}
	part, err := catalog.Parse("gen.json", buf.Bytes(), "")
	if err != nil {
		b.Fatal(err)
	}
	cat, err := catalog.New([]catalog.Part{part})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		Check(cat, nil, Config{})
	}
}
