// Package bintest builds this tree's commands for the tests that run them
// as operators do, in a process of their own. Tests use it and nothing
// else does (make lint's deadcode check leaves it out).
package bintest

import (
	"os/exec"
	"path/filepath"
	"testing"
)

// Build builds the command in dir (relative to the test's package, "."
// for its own) into a temporary directory of tb's, and returns its path.
func Build(tb testing.TB, dir string) string {
	tb.Helper()
	abs, err := filepath.Abs(dir)
	if err != nil {
		tb.Fatal(err)
	}
	bin := filepath.Join(tb.TempDir(), filepath.Base(abs))
	if out, err := exec.Command("go", "build", "-o", bin, dir).CombinedOutput(); err != nil {
		tb.Fatalf("go build %s: %v\n%s", dir, err, out)
	}
	return bin
}
