package pack

import (
	"strings"
	"testing"
	"unsafe"
)

// TestStrings: each string comes back as written, end to end with the
// one before it while they fit, and one longer than Size gets a string of
// its own.
func TestStrings(t *testing.T) {
	p := Strings{Size: 64}
	tests := []struct {
		text     string
		adjacent bool // starts where the one before ended
	}{
		{"first", false},
		{"second", true},
		{strings.Repeat("x", 40), true},
		{strings.Repeat("y", 20), false}, // 71 bytes: a new string
		{strings.Repeat("z", 100), false},
		{"", false},
		{strings.Repeat("a", 30), false}, // past the last string's room, rounded up or not
	}
	var end uintptr
	for i, tt := range tests {
		got := p.Write(len(tt.text), func(b *strings.Builder) { b.WriteString(tt.text) })
		if got != tt.text {
			t.Fatalf("%d: got %q, want %q", i, got, tt.text)
		}
		start := uintptr(unsafe.Pointer(unsafe.StringData(got)))
		if tt.text != "" && (start == end) != tt.adjacent {
			t.Errorf("%d: %q adjacent to the one before %v, want %v", i, tt.text, start == end, tt.adjacent)
		}
		if tt.text != "" {
			end = start + uintptr(len(got))
		}
	}
}
