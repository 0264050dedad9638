package inspect

import (
	"testing"

	"github.com/toolsearch/toolsearch/pkg/access"
)

// BenchmarkCatalog reports on 10,000 generated tools: the whole catalog,
// and one server of it (the console's view of a large catalog).
func BenchmarkCatalog(b *testing.B) {
	cat := catalogOf(b, generated(b, 10_000))
	svc := local(b, cat)
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
