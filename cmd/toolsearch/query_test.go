package main

import "testing"

// TestClip: a description prints on one line, without the escapes and
// direction overrides an upstream's text may carry to a terminal.
func TestClip(t *testing.T) {
	for _, tt := range []struct {
		in   string
		n    int
		want string
	}{
		{"Send a message.", 70, "Send a message."},
		{"two\nlines\tand  spaces", 70, "two lines and spaces"},
		{"red \x1b[31mtext\x1b[0m", 70, "red \ufffd[31mtext\ufffd[0m"},
		{"nul\x00 and bell\a", 70, "nul\ufffd and bell\ufffd"},
		{"abc\u202edcba", 70, "abc\ufffddcba"},
		{"ééééééééééé", 5, "éééé…"},
	} {
		if got := clip(tt.in, tt.n); got != tt.want {
			t.Errorf("clip(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
	}
}
