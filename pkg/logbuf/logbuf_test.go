package logbuf

import (
	"strings"
	"testing"
)

// TestBuffer: the zero value keeps everything; with Tail, only the last
// Tail bytes are kept (never over twice that), whatever is written, and
// String marks a cut start.
func TestBuffer(t *testing.T) {
	const tail = 64
	for _, tt := range []struct {
		name   string
		tail   int
		writes []int // sizes, each write of a letter of its own
		want   int   // bytes String shows, beyond the "…" of a cut
		cut    bool
	}{
		{"nothing", tail, nil, 0, false},
		{"short", tail, []int{10, 20}, 30, false},
		{"exactly the tail", tail, []int{tail}, tail, false},
		{"one over", tail, []int{tail, 1}, tail, true},
		{"many small", tail, []int{15, 15, 15, 15, 15, 15, 15, 15, 15, 15}, tail, true},
		{"one huge", tail, []int{10 * tail}, tail, true},
		{"unbounded", 0, []int{10 * tail, 3}, 10*tail + 3, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := Buffer{Tail: tt.tail}
			var all strings.Builder
			for i, n := range tt.writes {
				p := strings.Repeat(string(rune('a'+i%26)), n)
				all.WriteString(p)
				if got, err := b.Write([]byte(p)); got != n || err != nil {
					t.Fatalf("Write = %d, %v", got, err)
				}
				if tt.tail > 0 && len(b.b) > 2*tt.tail {
					t.Fatalf("holds %d bytes, over twice the tail", len(b.b))
				}
			}
			body, cut := strings.CutPrefix(b.String(), "…")
			if cut != tt.cut || len(body) != tt.want || !strings.HasSuffix(all.String(), body) {
				t.Errorf("String = %d bytes (cut %v), want the last %d (cut %v)", len(body), cut, tt.want, tt.cut)
			}
		})
	}
}
