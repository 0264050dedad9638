package search

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/toolsearch/toolsearch/pkg/catalog"
	"github.com/toolsearch/toolsearch/pkg/embedding"
	"github.com/toolsearch/toolsearch/pkg/index"
)

// A build analyses each tool's text once, in parts, for BM25 and the local
// embedder; the rows it makes are bit for bit what embedding each tool's
// whole Text gives, names split or not, ASCII or not.
func TestBuildEmbedsText(t *testing.T) {
	def, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	odd := catalog.Server{Name: "MyServer.v2", Tools: []catalog.Tool{
		{Name: "getS3Object", Description: "Fetch an object from a bucket."},
		{Name: "lint", Title: "Linter", Description: "Überprüft Dateien; the files' names.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"filePath":{"type":"string","description":"Which file"},"mode":{"enum":["fast","Thorough"]}}}`)},
		{Name: "plain", Description: ""},
	}}
	parts := []catalog.Part{}
	if dp, err := catalog.DefaultPart(); err == nil {
		parts = append(parts, dp)
	}
	parts = append(parts, catalog.Part{Source: "odd", Servers: []catalog.Server{odd}})
	cat, err := catalog.New(parts)
	if err != nil {
		t.Fatal(err)
	}
	if cat.Len() <= def.Len() {
		t.Fatalf("catalog of %d tools", cat.Len())
	}
	local := embedding.NewLocal(256)
	snap, err := New(Config{Embedder: local}).Build(t.Context(), &Setup{Catalog: cat})
	if err != nil {
		t.Fatal(err)
	}
	texts := make([]string, cat.Len())
	for i, tool := range cat.Tools() {
		texts[i] = tool.Text()
	}
	vecs, err := local.Fit(texts).Embed(t.Context(), texts)
	if err != nil {
		t.Fatal(err)
	}
	want, err := index.New(vecs, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range cat.Len() {
		if !slices.Equal(snap.Matrix.Row(i), want.Row(i)) {
			t.Errorf("%s: the build's row differs from embedding its text %q", cat.Tool(i).ID(), texts[i])
		}
	}
}
