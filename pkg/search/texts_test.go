package search

import (
	"fmt"
	"strings"
	"testing"
	"unsafe"

	"github.com/toolsearch/toolsearch/pkg/catalog"
)

// TestTextPacker checks that each text is the tool's Text and that texts
// lie end to end in strings of about packBytes, a text longer than that
// included.
func TestTextPacker(t *testing.T) {
	var tools []catalog.Tool
	for i := range 2000 {
		tl := catalog.Tool{Server: fmt.Sprintf("srv%d", i%7), Name: fmt.Sprintf("tool_%dName", i), Description: strings.Repeat("does a thing. ", i%40)}
		switch i % 3 {
		case 1:
			tl.Schemas = catalog.MakeSchemas([]byte(`{"type":"object","properties":{"state":{"type":"string","enum":["open","closed"],"description":"Filter by state"}}}`), nil, nil)
		case 2:
			tl.Title = "A title"
		}
		tools = append(tools, tl)
	}
	huge := catalog.Tool{Server: "big", Name: "huge", Description: strings.Repeat("x", catalog.MaxDescEmbedBytes)}
	for range packBytes/catalog.MaxDescEmbedBytes + 1 {
		huge.Title += strings.Repeat("y", catalog.MaxDescEmbedBytes)
	}
	tools = append(tools[:1000], append([]catalog.Tool{huge}, tools[1000:]...)...)

	p := newTextPacker()
	got := make([]string, len(tools))
	for i, tl := range tools {
		parts := tl.Fields().Parts()
		got[i] = p.text(&parts)
	}
	var strs, end uintptr
	for i, tl := range tools {
		if want := tl.Text(); got[i] != want {
			t.Fatalf("text %d = %q, want %q", i, got[i], want)
		}
		if parts := tl.Fields().Parts(); catalog.TextLen(&parts) != len(got[i]) {
			t.Fatalf("text %d: TextLen %d, Text %d bytes", i, catalog.TextLen(&parts), len(got[i]))
		}
		start := uintptr(unsafe.Pointer(unsafe.StringData(got[i])))
		if start != end {
			strs++
		}
		end = start + uintptr(len(got[i]))
	}
	var total int
	for _, s := range got {
		total += len(s)
	}
	// One string a packBytes, give or take the tail each leaves, and one
	// for the long text: more, and the packer copied or went astray.
	if most := uintptr(total/packBytes + 3); strs > most {
		t.Errorf("%d texts (%d bytes) in %d strings, want at most %d", len(got), total, strs, most)
	}
}
