package tooldef

import (
	"testing"

	"github.com/toolsearch/toolsearch/pkg/catalog"
)

// BenchmarkRender renders one tool in each format: a valid schema (the
// cost every definition pays for the check that it needs no mending) and
// one that needs mending.
func BenchmarkRender(b *testing.B) {
	faulty := tool
	faulty.Schemas = catalog.MakeSchemas([]byte(`{"properties":{"tags":{"type":"array","description":"Labels to attach."},"photo":{"type":"str","description":"The photo's id."}},"required":["photo"]}`), nil, nil)
	for _, tt := range []struct {
		name string
		tool catalog.Tool
	}{{"valid", tool}, {"mended", faulty}} {
		for _, format := range Formats {
			b.Run(tt.name+"/"+format, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, _, err := render(format, tt.tool, "create_issue"); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
