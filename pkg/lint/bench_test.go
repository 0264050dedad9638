package lint

import (
	"testing"

	"github.com/toolsearch/toolsearch/pkg/catgen"
	"github.com/toolsearch/toolsearch/pkg/catgen/gentest"
)

// BenchmarkCheck lints 10,000 generated tools without vectors: the
// catalog report (the console's catalog view) runs it on every request.
func BenchmarkCheck(b *testing.B) {
	cat := gentest.Catalog(b, catgen.Spec{Tools: 10_000, Seed: 1})
	b.ReportAllocs()
	for b.Loop() {
		Check(cat, nil, Config{})
	}
}
