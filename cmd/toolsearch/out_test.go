package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestCreateOut: -out is replaced whole, or kept whole when the run
// fails; what is not a regular file (a FIFO here, /dev/null in the eval
// gates, a symbolic link) is written through, never renamed over: that
// replaced /dev/null with a regular file.
func TestCreateOut(t *testing.T) {
	dir := t.TempDir()
	regular := filepath.Join(dir, "report.json")
	target := filepath.Join(dir, "target.json")
	link := filepath.Join(dir, "link.json")
	fifo := filepath.Join(dir, "fifo")
	for _, p := range []string{regular, target} {
		if err := os.WriteFile(p, []byte("old"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 1)
	go func() { // the FIFO's reader; opening it for writing waits for one
		b, _ := os.ReadFile(fifo)
		got <- string(b)
	}()
	tests := []struct {
		name, path string
		commit     bool
		read       string // the file whose content is checked ("" for path)
		want       string
		mode       os.FileMode // of path afterwards
	}{
		{"a new file", filepath.Join(dir, "new.json"), true, "", "new", 0o644},
		{"a file replaced", regular, true, "", "new", 0o644},
		{"a failed run keeps the file", target, false, "", "old", 0o644},
		{"a link is written through", link, true, target, "new", os.ModeSymlink},
		{"a FIFO is written through", fifo, true, "-", "new", os.ModeNamedPipe},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := createOut(tt.path)
			if err != nil {
				t.Fatal(err)
			}
			io.WriteString(o, "new")
			if tt.commit {
				if err := o.commit(); err != nil {
					t.Fatal(err)
				}
			}
			o.discard()
			var content string
			switch tt.read {
			case "-":
				content = <-got
			case "":
				b, _ := os.ReadFile(tt.path)
				content = string(b)
			default:
				b, _ := os.ReadFile(tt.read)
				content = string(b)
			}
			fi, err := os.Lstat(tt.path)
			switch {
			case err != nil:
				t.Fatal(err)
			case content != tt.want:
				t.Errorf("content %q, want %q", content, tt.want)
			case tt.mode.Type() != 0 && fi.Mode().Type() != tt.mode.Type():
				t.Errorf("%s is now %v, want still %v", tt.path, fi.Mode().Type(), tt.mode.Type())
			case tt.mode.Type() == 0 && fi.Mode() != tt.mode:
				t.Errorf("mode %v, want %v", fi.Mode(), tt.mode)
			}
		})
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".toolsearch-out-*")); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
	missing := filepath.Join(dir, "missing")
	if _, err := createOut(filepath.Join(missing, "r.json")); err == nil || err.Error() != "-out "+filepath.Join(missing, "r.json")+": cannot write in "+missing+": no such file or directory" {
		t.Errorf("a missing directory: %v, want an error naming -out and the directory, not a temporary file", err)
	}
}

// TestCheckOut: -out is checked before the work without changing
// anything: an existing file keeps its content, a missing one is not
// left behind, a FIFO is not opened (that would wait for a reader), and
// a missing directory or a directory itself is an error naming -out.
func TestCheckOut(t *testing.T) {
	dir := t.TempDir()
	existing := filepath.Join(dir, "report.json")
	if err := os.WriteFile(existing, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path string
		err        string
	}{
		{"an existing file", existing, ""},
		{"a new file", filepath.Join(dir, "new.json"), ""},
		{"a FIFO", fifo, ""},
		{"a missing directory", filepath.Join(dir, "missing", "r.json"), "-out "},
		{"a directory", dir, "is a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkOut(tt.path)
			if (err == nil) != (tt.err == "") || err != nil && !strings.Contains(err.Error(), tt.err) {
				t.Errorf("checkOut = %v, want %q", err, tt.err)
			}
		})
	}
	if b, _ := os.ReadFile(existing); string(b) != "old" {
		t.Errorf("the existing file holds %q after the check", b)
	}
	if _, err := os.Stat(filepath.Join(dir, "new.json")); err == nil {
		t.Error("the check left a new file behind")
	}
}
