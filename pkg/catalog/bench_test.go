package catalog_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/toolsearch/toolsearch/pkg/catalog"
	"github.com/toolsearch/toolsearch/pkg/catgen"
	"github.com/toolsearch/toolsearch/pkg/catgen/gentest"
)

// BenchmarkParse reads generated catalogs (package catgen) as written and
// indented, as a saved tools/list answer usually is.
func BenchmarkParse(b *testing.B) {
	for _, n := range []int{73, 10000} {
		var buf bytes.Buffer
		if err := (catgen.Spec{Tools: n, Seed: 1}).Write(&buf); err != nil {
			b.Fatal(err)
		}
		var indented bytes.Buffer
		if err := json.Indent(&indented, buf.Bytes(), "", "  "); err != nil {
			b.Fatal(err)
		}
		for _, c := range []struct {
			name string
			data []byte
		}{{"compact", buf.Bytes()}, {"indented", indented.Bytes()}} {
			b.Run(fmt.Sprintf("%s/N=%d", c.name, n), func(b *testing.B) {
				b.SetBytes(int64(len(c.data)))
				b.ReportAllocs()
				for b.Loop() {
					if _, err := catalog.Parse("bench", c.data, ""); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkFields is the text of 10,000 generated tools, as a build reads
// it from each before analysing it: most of it is the parameters' names
// and descriptions, read from each tool's input schema.
func BenchmarkFields(b *testing.B) {
	tools := gentest.Catalog(b, catgen.Spec{Tools: 10000, Seed: 1}).Tools()
	b.ReportAllocs()
	for b.Loop() {
		for _, t := range tools {
			t.Fields()
		}
	}
}
