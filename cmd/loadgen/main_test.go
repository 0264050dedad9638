package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestRun drives both routes briefly, with learning off and on, and
// checks the report's shape: one line per route without errors (with
// -callers, every client's key admitted), and the ratio line with every
// round's.
func TestRun(t *testing.T) {
	for _, extra := range [][]string{nil, {"-learning"}, {"-learning", "-callers", "3"}} {
		var out bytes.Buffer
		args := append([]string{"-c", "2", "-d", "100ms", "-rounds", "2", "-mode", "hybrid", "-cases", "../../evals/cases.jsonl"}, extra...)
		if err := run(t.Context(), args, &out); err != nil {
			t.Fatalf("run %v: %v\n%s", extra, err, out.String())
		}
		for _, want := range []string{"bare ", "noop ", "search ", "errors 0", "search throughput / no-op throughput = ", "no-op throughput / bare throughput = ", "no-op CPU per request / search CPU per request = ", " cores, ", "rounds "} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("%v: report lacks %q:\n%s", extra, want, out.String())
			}
		}
	}
}

func TestRunRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{{"-rounds", "0"}, {"-c", "0"}, {"-d", "0s"}, {"-cases", "/nonexistent.jsonl"}, {"-callers", "-1"}, {"-callers", "2", "-url", "http://127.0.0.1:1"}} {
		if err := run(t.Context(), args, &bytes.Buffer{}); err == nil {
			t.Errorf("run(%v) = nil error", args)
		}
	}
}

func TestMedian(t *testing.T) {
	for _, tt := range []struct {
		in   []float64
		want float64
	}{{[]float64{3}, 3}, {[]float64{3, 1, 2}, 2}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := median(tt.in); got != tt.want {
			t.Errorf("median(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}
