package main

import (
	"bytes"
	"regexp"
	"testing"

	"github.com/toolsearch/toolsearch/cmd/internal/bintest"
)

// TestRun: a small run against the binary reports, for each mode, a
// figure a connection in clear and over TLS, and their ratio; the server
// over TLS is started, made ready and reached through serveproc as the
// figures need.
func TestRun(t *testing.T) {
	bin := bintest.Build(t, "../toolsearch")
	var stdout, stderr bytes.Buffer
	if err := run(t.Context(), []string{"-bin", bin, "-n", "16", "-rounds", "1", "-hold", "0s"}, &stdout, &stderr); err != nil {
		t.Fatalf("run: %v\n%s", err, &stderr)
	}
	for _, mode := range []string{"body", "headers"} {
		row := regexp.MustCompile(`(?m)^1\s+` + mode + `\s+-?[0-9.]+ \(-?[0-9.]+\)\s+-?[0-9.]+ \(-?[0-9.]+\)\s+\S+$`)
		if !row.Match(stdout.Bytes()) {
			t.Errorf("no %s row in:\n%s", mode, &stdout)
		}
	}
}
