package catalog

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// FuzzParse checks that any document either fails with an error that names
// its source, or yields a catalog whose every tool resolves to itself.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"servers":[{"name":"gh","tools":[{"name":"create_issue","description":"Open an issue","inputSchema":{"type":"object","properties":{"title":{"type":"string","enum":["a"]}}}}]}]}`))
	f.Add([]byte(`{"tools":[{"name":"echo"},{"name":"/v1/x"}],"nextCursor":"abc"}`))
	f.Add([]byte("servers:\n  - name: a\n    tools:\n      - name: b\n        description: c\n"))
	f.Add([]byte(`{"servers":[{"name":"a","tools":[{"name":"x","inputSchema":[1]}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse("fuzz.json", data, "")
		if err != nil {
			if !strings.Contains(err.Error(), "fuzz.json") {
				t.Fatalf("error does not name the source: %v", err)
			}
			return
		}
		c, err := New([]Part{p})
		if err != nil {
			return
		}
		for i, tool := range c.Tools() {
			_ = tool.Text()
			j, err := c.Resolve(tool.ID())
			if err != nil {
				// Only a shared ID string ("a"+"b/c", "a/b"+"c") may fail, as ambiguous.
				if !strings.Contains(err.Error(), "ambiguous") {
					t.Fatalf("Resolve(%q) = %v", tool.ID(), err)
				}
				continue
			}
			if j != i {
				t.Fatalf("Resolve(%q) = %d, want %d", tool.ID(), j, i)
			}
		}
	})
}

// FuzzCompact holds appendCompact to json.Compact on valid JSON.
func FuzzCompact(f *testing.F) {
	for _, s := range []string{`{"a": [1, 2 ,{"b" : "c d"}]}`, "{\n\t\"q\\\"x \": \"\\\\\", \"r\":\r\n null}", `"  "`, `[]`, ` 1.5e3 `, `{"a":"\u00e9 \ud800"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		if !json.Valid(src) {
			return
		}
		var want bytes.Buffer
		if err := json.Compact(&want, src); err != nil {
			t.Fatal(err)
		}
		if got := appendCompact(nil, src); !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("appendCompact(%q) = %q, json.Compact %q", src, got, want.Bytes())
		}
	})
}
