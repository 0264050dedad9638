package readfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRead: a file within the bound is read whole; one over it, or a
// device that never ends, is an error naming the path and the bound,
// read no further than the bound.
func TestRead(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, n int) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(strings.Repeat("x", n)), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name, path string
		max        int64
		want       int    // bytes read
		err        string // in the error; "" for none
		tooLarge   bool
	}{
		{"empty", write("empty", 0), 10, 0, "", false},
		{"at the bound", write("at", 10), 10, 10, "", false},
		{"over it", write("over", 11), 10, 0, "over: file too large: larger than 10 bytes", true},
		{"endless", "/dev/zero", 1 << 20, 0, "/dev/zero: file too large: larger than 1 MiB", true},
		{"missing", filepath.Join(dir, "missing"), 10, 0, "no such file", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data, err := Read(tt.path, tt.max)
			switch {
			case tt.err == "" && (err != nil || len(data) != tt.want):
				t.Errorf("Read = %d bytes, %v; want %d", len(data), err, tt.want)
			case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
				t.Errorf("Read error = %v; want one with %q", err, tt.err)
			case errors.Is(err, ErrTooLarge) != tt.tooLarge:
				t.Errorf("Read error = %v; ErrTooLarge %v, want %v", err, errors.Is(err, ErrTooLarge), tt.tooLarge)
			}
		})
	}
}
