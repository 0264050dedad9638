package main

import (
	"bytes"
	"io"
	"net/http"
	"regexp"
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

// TestNoopWritesTheSearchAnswer: for every query of the run, the no-op
// writes byte for byte what the search does (learning off, so answers
// carry no search id) but for the time the search took, so the two
// phases send the same bytes.
func TestNoopWritesTheSearchAnswer(t *testing.T) {
	queries, err := loadQueries("../../evals/cases.jsonl", "")
	if err != nil {
		t.Fatal(err)
	}
	addr, stop, err := serve(t.Context(), queries, false, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	post := func(path string, q []byte) string {
		t.Helper()
		resp, err := http.Post("http://"+addr+path, "application/json", bytes.NewReader(q))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s %s: %d %s", path, q, resp.StatusCode, b)
		}
		return string(b)
	}
	took := regexp.MustCompile(`"took_ms":[0-9.e+-]+`)
	sizes := map[int]bool{}
	for _, q := range queries {
		noop, srch := took.ReplaceAllString(post("/noop", q), "T"), took.ReplaceAllString(post("/mcp/tool-search", q), "T")
		if noop != srch {
			t.Errorf("%s: the no-op wrote %d bytes, the search %d:\n%.200s\n%.200s", q, len(noop), len(srch), noop, srch)
		}
		sizes[len(srch)] = true
	}
	if len(sizes) < 2 {
		t.Errorf("every answer is %v bytes: the queries do not tell one answer from another", sizes)
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
