// Package gentest gives tests and benchmarks the catalog a catgen.Spec
// writes, read as a catalog file is. It is apart from package catgen,
// which package catalog's own tests import.
package gentest

import (
	"bytes"
	"testing"

	"github.com/toolsearch/toolsearch/pkg/catalog"
	"github.com/toolsearch/toolsearch/pkg/catgen"
)

// Catalog is the catalog sp writes, read from a file named "generated".
func Catalog(tb testing.TB, sp catgen.Spec) *catalog.Catalog {
	tb.Helper()
	var buf bytes.Buffer
	if err := sp.Write(&buf); err != nil {
		tb.Fatal(err)
	}
	part, err := catalog.Parse("generated", buf.Bytes(), "")
	if err != nil {
		tb.Fatal(err)
	}
	cat, err := catalog.New([]catalog.Part{part})
	if err != nil {
		tb.Fatal(err)
	}
	return cat
}
