package lint

import (
	"testing"

	"github.com/toolsearch/toolsearch/pkg/catgen"
)

// BenchmarkCheck lints 10,000 generated tools without vectors: the
// catalog report (the console's catalog view) runs it on every request.
func BenchmarkCheck(b *testing.B) {
	cat, err := (catgen.Spec{Tools: 10_000, Seed: 1}).Catalog()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		Check(cat, nil, Config{})
	}
}
