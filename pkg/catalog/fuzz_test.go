package catalog

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// FuzzParse checks that any document either fails with an error that names
// its source, or reads as encoding/json reads it (schemas compact) and
// yields a catalog whose every tool resolves to itself; and that a
// document read on every core (decodeSplit) reads as it does whole.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"servers":[{"name":"gh","tools":[{"name":"create_issue","description":"Open an issue","inputSchema":{"type":"object","properties":{"title":{"type":"string","enum":["a"]}}}}]}]}`))
	f.Add([]byte(`{"tools":[{"name":"echo"},{"name":"/v1/x"}],"nextCursor":"abc"}`))
	f.Add([]byte("servers:\n  - name: a\n    tools:\n      - name: b\n        description: c\n"))
	f.Add([]byte("tools:\n  - name: b\n    description: 5\n    a~/b: &x {k: *x}\n")) // a YAML error, placed by yamljson.Locate
	f.Add([]byte(`{"servers":[{"name":"a","tools":[{"name":"x","inputSchema":[1]}]}]}`))
	f.Add([]byte(`{"servers":null,"tools":[{"name":"a\u00e9\"b","description":null,"inputSchema":null,"annotations":{ "readOnlyHint" : true }}],"_meta":null}`))
	f.Add([]byte("{\"tools\":[{\"name\":\"x\",\"title\":\"\xff\"}]} x"))
	f.Add([]byte(`{"tools":[{"name":"h\u202e","title":"a\u2066b","description":"c\udb40\udc41","inputSchema":{"type":"object","description":"\udb40\udc42","properties":{"k\u202a":{"enum":["\u2069"]}}}}]}`))
	f.Add([]byte("{\"tools\":[{\"name\":\"v\",\"title\":\"\ufe0fa\u2764\ufe0f\ufe01\",\"description\":\"\U0001F600\U000E0138\u2062\",\"inputSchema\":{\"description\":\"\\ufe0f\\udb40\\udd38\"}}]}"))
	f.Add([]byte(`{"servers":[{"name":"a","tools":[{"name":"x\"}]","description":"\\\\"}, {"name":"y","inputSchema":{"tools":[{}]}}]}]}`)) // read on every core
	f.Add([]byte(`{"tools":[{"name":"r","execution":{"taskSupport":"required"}},{"name":"s","execution":{"taskSupport":"sometimes"}},{"name":"t","execution":null}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if split, ok := decodeSplit("f.json", data); ok {
			if whole, err := readWhole(data); err != nil || !reflect.DeepEqual(split, whole) {
				t.Fatalf("read on every core as %+v; whole, %+v (%v)", split, whole, err)
			}
		}
		p, err := Parse("fuzz.json", data, "")
		if err != nil {
			if !strings.Contains(err.Error(), "fuzz.json") {
				t.Fatalf("error does not name the source: %v", err)
			}
			return
		}
		if bytes.HasPrefix(data, []byte("{")) {
			sameAsEncodingJSON(t, data, p)
		}
		c, err := New([]Part{p})
		if err != nil {
			return
		}
		for i, tool := range c.Tools() {
			_ = tool.Text()
			if firstHidden(tool.Title) >= 0 || firstHidden(tool.Description) >= 0 {
				t.Fatalf("hidden characters served: %q, %q", tool.Title, tool.Description)
			}
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

// sameAsEncodingJSON checks a part Parse read from data, a JSON document,
// against encoding/json's reading of it.
func sameAsEncodingJSON(t *testing.T, data []byte, p Part) {
	t.Helper()
	type tool struct {
		Name, Title, Description               string
		InputSchema, OutputSchema, Annotations json.RawMessage
	}
	var f struct {
		Servers []struct {
			Name  string
			Tools []tool
		}
		Tools []tool
	}
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatalf("Parse accepted what encoding/json rejects (%v): %q", err, data)
	}
	if len(f.Tools) > 0 {
		f.Servers = append(f.Servers, struct {
			Name  string
			Tools []tool
		}{p.Servers[0].Name, f.Tools})
	}
	if len(f.Servers) != len(p.Servers) {
		t.Fatalf("%d servers, encoding/json %d", len(p.Servers), len(f.Servers))
	}
	compact := func(raw json.RawMessage) string {
		var b bytes.Buffer
		if len(raw) > 0 {
			json.Compact(&b, raw)
		}
		return b.String()
	}
	for i, s := range f.Servers {
		got := p.Servers[i]
		if got.Name != s.Name || len(got.Tools) != len(s.Tools) {
			t.Fatalf("server %d: %q with %d tools, encoding/json %q with %d", i, got.Name, len(got.Tools), s.Name, len(s.Tools))
		}
		for j, w := range s.Tools {
			g := got.Tools[j]
			if g.Name != w.Name || g.Title != w.Title || g.Description != w.Description ||
				string(g.Schemas.Input()) != compact(w.InputSchema) ||
				string(g.Schemas.Output()) != compact(w.OutputSchema) ||
				string(g.Schemas.Annotations()) != compact(w.Annotations) {
				t.Fatalf("server %d tool %d: %+v, encoding/json %+v", i, j, g, w)
			}
		}
	}
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

// TestAnnotationsOK: MCP's annotations, as upstreams send them, take the
// fast path; what the checks have a word for does not.
func TestAnnotationsOK(t *testing.T) {
	for _, tt := range []struct {
		raw string
		ok  bool
	}{
		{`{}`, true},
		{` { "title" : "Create an issue", "readOnlyHint": false, "destructiveHint": false, "idempotentHint": null, "openWorldHint": true } `, true},
		{`{"readOnlyHint":true}`, true},
		{`{"readOnlyHint":"yes"}`, false},
		{`{"title":1}`, false},
		{`{"x-cost":1}`, false},
		{`{"read\u004fnlyHint":true}`, false}, // escaped: the map reads it
		{`{"readOnlyHint":true,"readOnlyHint":false}`, false},
		{`[true]`, false},
		{`{}x`, false},
		{`{"readOnlyHint":true`, false},
	} {
		if got := annotationsOK([]byte(tt.raw)); got != tt.ok {
			t.Errorf("annotationsOK(%q) = %v, want %v", tt.raw, got, tt.ok)
		}
	}
}

// FuzzAnnotations: annotationsOK, the fast path, says OK only of
// annotations the map-reading checks find nothing wrong with.
func FuzzAnnotations(f *testing.F) {
	for _, s := range []string{`{}`, `{"title":"T","readOnlyHint":true,"destructiveHint":false,"idempotentHint":null,"openWorldHint":true}`,
		`{"readOnlyHint":"yes"}`, `{"x-cost":1}`, `{"read\u004fnlyHint":true}`, `{"title":1}`, `[true]`, `{"readOnlyHint":true} x`, `{"a":1,"a":2}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if annotationsOK(raw) && (annotationsError(raw) != nil || len(annotationsUnknown(raw)) > 0 || !json.Valid(raw)) {
			t.Fatalf("annotationsOK(%q), but the checks find fault", raw)
		}
	})
}

// BenchmarkAnnotations is what a tool's annotations cost at load: MCP's
// own (annotationsOK, every upstream's), and the map the checks read when
// a key is not MCP's.
func BenchmarkAnnotations(b *testing.B) {
	for _, tt := range []struct{ name, raw string }{
		{"mcp", `{"title":"Create an issue","readOnlyHint":false,"destructiveHint":false,"idempotentHint":false,"openWorldHint":true}`},
		{"other-key", `{"title":"Create an issue","readOnlyHint":false,"x-cost":3}`},
	} {
		b.Run(tt.name, func(b *testing.B) {
			raw := json.RawMessage(tt.raw)
			for b.Loop() {
				_ = checkAnnotations(raw)
				_ = unknownAnnotations(raw)
			}
		})
	}
	b.Run("mcp-by-map", func(b *testing.B) { // the checks without annotationsOK: the baseline
		raw := json.RawMessage(`{"title":"Create an issue","readOnlyHint":false,"destructiveHint":false,"idempotentHint":false,"openWorldHint":true}`)
		for b.Loop() {
			_ = annotationsError(raw)
			_ = annotationsUnknown(raw)
		}
	})
}

// FuzzSchemaScans: the byte scans that spare decoding a schema miss no
// key the checks read once it is decoded, "$ref", "pattern" or
// "patternProperties", however JSON spells it.
func FuzzSchemaScans(f *testing.F) {
	for _, s := range []string{`{"$ref":"#"}`, `{"\u0024ref":"#"}`, `{"pattern":"a"}`, `{"p\u0061ttern":"a"}`,
		`{"patternProperti\u0065s":{}}`, `{"description":"\u003c\u00e9"}`, `{"a":{"$ref":"#/$defs/x"}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var v any
		if json.Unmarshal(raw, &v) != nil {
			return
		}
		var ref, pattern bool
		var walk func(any)
		walk = func(v any) {
			switch x := v.(type) {
			case []any:
				for _, e := range x {
					walk(e)
				}
			case map[string]any:
				for k, e := range x {
					ref = ref || k == "$ref"
					pattern = pattern || k == "pattern" || k == "patternProperties"
					walk(e)
				}
			}
		}
		walk(v)
		if ref && !mayRefer(raw) {
			t.Fatalf("%q has a $ref the scan misses", raw)
		}
		if pattern && !mayHavePattern(raw) {
			t.Fatalf("%q has a pattern the scan misses", raw)
		}
	})
}
