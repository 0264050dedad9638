package inspect

import (
	"bytes"
	"testing"

	"github.com/toolsearch/toolsearch/pkg/access"
	"github.com/toolsearch/toolsearch/pkg/catalog"
	"github.com/toolsearch/toolsearch/pkg/catgen"
	"github.com/toolsearch/toolsearch/pkg/embedding"
	"github.com/toolsearch/toolsearch/pkg/search"
)

// BenchmarkCatalog reports on 10,000 generated tools: the whole catalog,
// and one server of it (the console's view of a large catalog).
func BenchmarkCatalog(b *testing.B) {
	var buf bytes.Buffer
	if err := catgen.Write(&buf, 10_000, 1); err != nil {
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
	svc := search.New(search.Config{Embedder: embedding.NewLocal(0)})
	if _, err := svc.Build(b.Context(), &search.Setup{Catalog: cat}); err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name    string
		servers []string
	}{
		{"all", nil},
		{"one-server", []string{cat.Tools()[0].Server}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Catalog(b.Context(), svc, access.Caller{}, bc.servers); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
