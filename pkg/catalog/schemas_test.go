package catalog

import (
	"bytes"
	"strings"
	"testing"
	"unsafe"

	"github.com/toolsearch/toolsearch/pkg/internal/pack"
)

// TestSchemas: the three come back as given, whatever their bytes, apart
// and in their places, and coded a usual schema takes fewer bytes.
func TestSchemas(t *testing.T) {
	usual := []byte(`{"type":"object","properties":{"path":{"type":"string","description":"The file to read."},"lines":{"type":"integer","minimum":1,"default":10}},"required":["path"],"additionalProperties":false}`)
	tests := []struct {
		name             string
		in, out, ann     []byte
		hasIn, hasOut, a bool
	}{
		{name: "none"},
		{"input only", usual, nil, nil, true, false, false},
		{"output only", nil, []byte(`{"type":"string"}`), nil, false, true, false},
		{"annotations only", nil, nil, []byte(`{"readOnlyHint":true}`), false, false, true},
		{"all three", usual, []byte(`{"type":"object"}`), []byte(`{"title":"Read","readOnlyHint":true,"openWorldHint":false}`), true, true, true},
		// Not compact, and every byte a code stands for: an escape, each
		// code's byte, fragments cut short and run together.
		{"any bytes", []byte("{\n\t\"type\": \"object\"\r\n}\x00\x01\x1e\x1f\x1f"), []byte(`"type":"type":"description":"descr`), []byte("\x1f"), true, true, true},
		{"fragments only", []byte(`"},"":{"","truefalse"}`), nil, nil, true, false, false},
		{"UTF-8 and escapes", []byte(`{"description":"Überprüft \u200b \"type\":\"string\" 日本"}`), nil, nil, true, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := MakeSchemas(tt.in, tt.out, tt.ann)
			for _, c := range []struct {
				what       string
				got, want  []byte
				has, want2 bool
			}{
				{"input", s.Input(), tt.in, s.HasInput(), tt.hasIn},
				{"output", s.Output(), tt.out, s.Output() != nil, tt.hasOut},
				{"annotations", s.Annotations(), tt.ann, s.Annotations() != nil, tt.a},
			} {
				if !bytes.Equal(c.got, c.want) || (c.got == nil) != (len(c.want) == 0) {
					t.Errorf("%s = %q, want %q", c.what, c.got, c.want)
				}
				if c.has != c.want2 {
					t.Errorf("%s present %v, want %v", c.what, c.has, c.want2)
				}
			}
			if got, want := s.Len(), len(tt.in)+len(tt.out)+len(tt.ann); got != want {
				t.Errorf("Len() = %d, want %d", got, want)
			}
			if got := s.AppendInput([]byte("x")); string(got) != "x"+string(tt.in) {
				t.Errorf("AppendInput(x) = %q", got)
			}
			var p schemaPacker
			if packed := p.schemas(tt.in, tt.out, tt.ann); packed != s {
				t.Errorf("packed %+v, MakeSchemas %+v", packed, s)
			}
		})
	}
	if s := MakeSchemas(usual, nil, nil); len(s.coded) > len(usual)*3/4 {
		t.Errorf("a usual schema of %d bytes is %d coded, want at most three quarters", len(usual), len(s.coded))
	}
	// The longest fragment first would code `":{"` and leave
	// `description":"` as it is: 16 bytes where 4 will do.
	if s := MakeSchemas([]byte(`":{"description":"`), nil, nil); len(s.coded) != 4 {
		t.Errorf(`":{"description":" is %d bytes coded (%q), want 4`, len(s.coded), s.coded)
	}
}

// TestSchemaPacker: a decoder's tools share strings of its size, and each
// keeps its own schemas.
func TestSchemaPacker(t *testing.T) {
	p := schemaPacker{p: pack.Strings{Size: 4 << 10}}
	var all []Schemas
	var want [][]byte
	for i := range 500 {
		in := []byte(`{"type":"object","properties":{"p` + strings.Repeat("x", i%40) + `":{"type":"string"}}}`)
		if i == 250 {
			in = bytes.Repeat([]byte(`{"a":1}`), 1000) // longer than a string of the packer's
		}
		all, want = append(all, p.schemas(in, nil, nil)), append(want, in)
	}
	var strs, total, end uintptr
	for i, s := range all {
		if got := s.Input(); !bytes.Equal(got, want[i]) {
			t.Fatalf("schema %d = %q, want %q", i, got, want[i])
		}
		if start := uintptr(unsafe.Pointer(unsafe.StringData(s.coded))); start != end {
			strs++
		}
		end = uintptr(unsafe.Pointer(unsafe.StringData(s.coded))) + uintptr(len(s.coded))
		total += uintptr(len(s.coded))
	}
	// One string a size, give or take the tail each leaves, and one for
	// the long schema: more, and each tool had its own.
	if most := total/uintptr(p.p.Size) + 3; strs > most {
		t.Errorf("%d schemas (%d bytes coded) in %d strings, want at most %d", len(all), total, strs, most)
	}
}

// FuzzSchemas: any three byte strings come back as given.
func FuzzSchemas(f *testing.F) {
	f.Add([]byte(`{"type":"object","properties":{"q":{"type":"string","description":"Search text."}},"required":["q"]}`), []byte(`{"type":"object"}`), []byte(`{"readOnlyHint":true}`))
	f.Add([]byte("\x1f\x00\x1e"), []byte(`"},"`), []byte(nil))
	f.Fuzz(func(t *testing.T, in, out, ann []byte) {
		s := MakeSchemas(in, out, ann)
		if !bytes.Equal(s.Input(), in) || !bytes.Equal(s.Output(), out) || !bytes.Equal(s.Annotations(), ann) {
			t.Fatalf("MakeSchemas(%q, %q, %q) reads back %q, %q, %q", in, out, ann, s.Input(), s.Output(), s.Annotations())
		}
		if s.Len() != len(in)+len(out)+len(ann) {
			t.Fatalf("Len %d, want %d", s.Len(), len(in)+len(out)+len(ann))
		}
		// Only a byte compact JSON never holds is written longer.
		if !bytes.ContainsFunc(in, func(r rune) bool { return r < 0x20 }) && len(s.input()) > len(in) {
			t.Fatalf("%q grew coded to %d bytes", in, len(s.input()))
		}
	})
}
