package main

import (
	"bytes"
	"regexp"
	"strconv"
	"testing"

	"github.com/toolsearch/toolsearch/cmd/internal/bintest"
)

// TestFlood: a short flood of replayed ClientHellos against the binary,
// without the handshake limit, is answered with handshakes, none reset,
// and the report gives the CPU a connection costs each side and the
// searching client's latency with and without the flood.
func TestFlood(t *testing.T) {
	bin := bintest.Build(t, "../toolsearch")
	var stdout, stderr bytes.Buffer
	if err := run(t.Context(), []string{"-bin", bin, "-flood", "-d", "1s", "-c", "2", "-handshake-rate", "-1"}, &stdout, &stderr); err != nil {
		t.Fatalf("run: %v\n%s", err, &stderr)
	}
	m := regexp.MustCompile(`flood: 2 flooders for 1s, (\d+) connections \(\d+ a second\): (\d+) answered with a signed handshake, (\d+) reset unread`).FindSubmatch(stdout.Bytes())
	if m == nil {
		t.Fatalf("no flood line in:\n%s", &stdout)
	}
	n, _ := strconv.Atoi(string(m[1]))
	answered, _ := strconv.Atoi(string(m[2]))
	if n == 0 || answered != n || string(m[3]) != "0" {
		t.Errorf("without the limit: %s connections, %s answered, %s reset; want every one answered", m[1], m[2], m[3])
	}
	for _, line := range []string{
		`(?m)^CPU: the server \d+\.\d+ s, \d+ µs a connection; this process \d+\.\d+ s, \d+ µs a connection`,
		`(?m)^one client's searches on a kept connection, 20 a second: p50 \d+\.\d+ ms without the flood, \d+\.\d+ ms in it \(\d+\.\dx\); p99 .*; failed 0, 0$`,
	} {
		if !regexp.MustCompile(line).Match(stdout.Bytes()) {
			t.Errorf("no line matching %s in:\n%s", line, &stdout)
		}
	}
}

// TestHog: a short hog of 20 connections against a cap of 5 an address
// reports what it opened and held, and the other address's searches.
func TestHog(t *testing.T) {
	bin := bintest.Build(t, "../toolsearch")
	var stdout, stderr bytes.Buffer
	if err := run(t.Context(), []string{"-bin", bin, "-hog", "20", "-d", "2s", "-per-address", "5"}, &stdout, &stderr); err != nil {
		t.Fatalf("run: %v\n%s", err, &stderr)
	}
	for _, line := range []string{
		`(?m)^hog: 20 connections from 127\.0\.0\.1 for 2s, \d+ opened, \d+ reset at once, [0-5] open a second in$`,
		`(?m)^a client at 127\.0\.0\.2, a new connection for each search, 20 a second: p50 \d+\.\d+ ms without the hog, \d+\.\d+ ms with it; p99 .*; failed \d+ of \d+, \d+ of \d+ \(2 s timeout\)$`,
	} {
		if !regexp.MustCompile(line).Match(stdout.Bytes()) {
			t.Errorf("no line matching %s in:\n%s", line, &stdout)
		}
	}
}

// TestOpenFlood: a short flood of requests no key pays for is answered
// (nothing budgets them), and the report gives the server's CPU and the
// keyed client's searches with and without it.
func TestOpenFlood(t *testing.T) {
	bin := bintest.Build(t, "../toolsearch")
	var stdout, stderr bytes.Buffer
	if err := run(t.Context(), []string{"-bin", bin, "-open", "-d", "1s", "-c", "2"}, &stdout, &stderr); err != nil {
		t.Fatalf("run: %v\n%s", err, &stderr)
	}
	m := regexp.MustCompile(`(?m)^open flood: 2 flooders at 127\.0\.0\.1 for 1s, (\d+) requests \(\d+ a second\): (\d+) answered, 0 refused 429, \d+ failed$`).FindSubmatch(stdout.Bytes())
	if m == nil || string(m[1]) == "0" || string(m[1]) != string(m[2]) {
		t.Fatalf("no open flood line with every request answered in:\n%s", &stdout)
	}
	for _, line := range []string{
		`(?m)^CPU: the server \d+\.\d+ s \(\d+\.\d+ cores\)$`,
		`(?m)^a client at 127\.0\.0\.2, searches with its key on a kept connection, 20 a second: p50 \d+\.\d+ ms without the flood, \d+\.\d+ ms in it \(\d+\.\dx\); p99 .*; failed 0, 0$`,
	} {
		if !regexp.MustCompile(line).Match(stdout.Bytes()) {
			t.Errorf("no line matching %s in:\n%s", line, &stdout)
		}
	}
}
