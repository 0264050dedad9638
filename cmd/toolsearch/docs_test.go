package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the docs' example outputs from real runs (TestDocs)")

// An example is a "$ command" line of an indented block of a document and
// the output lines under it, up to the next command or the block's end.
type example struct {
	line int // of the command, 1-based
	cmd  string
	out  []string // as written, without the block's indent
	end  int      // index in the document's lines after the output
}

// A block is one indented code block with at least one example, and the
// directive before it: "serve ARGS..." (NAME=VALUE words go to the
// environment) or "skip REASON".
type block struct {
	directive string
	examples  []example
}

var directiveRE = regexp.MustCompile(`^<!-- docs-check: (.*) -->$`)

func readmeBlocks(lines []string) []block {
	var out []block
	directive := ""
	for i := 0; i < len(lines); i++ {
		if m := directiveRE.FindStringSubmatch(lines[i]); m != nil {
			directive = m[1]
			continue
		}
		if !strings.HasPrefix(lines[i], "    ") {
			if strings.TrimSpace(lines[i]) != "" {
				directive = "" // a directive belongs to the next block only
			}
			continue
		}
		var b block
		for ; i < len(lines) && (strings.HasPrefix(lines[i], "    ") || strings.TrimSpace(lines[i]) == ""); i++ {
			text := strings.TrimPrefix(lines[i], "    ")
			if cmd, ok := strings.CutPrefix(text, "$ "); ok {
				b.examples = append(b.examples, example{line: i + 1, cmd: cmd, end: i + 1})
				continue
			}
			if n := len(b.examples); n > 0 {
				e := &b.examples[n-1]
				e.out = append(e.out, text)
				e.end = i + 1
			}
		}
		for j := range b.examples {
			e := &b.examples[j]
			for len(e.out) > 0 && strings.TrimSpace(e.out[len(e.out)-1]) == "" {
				e.out, e.end = e.out[:len(e.out)-1], e.end-1
			}
		}
		if len(b.examples) > 0 {
			b.directive = directive
			out = append(out, b)
		}
		directive = ""
	}
	return out
}

// volatile are the parts of an answer that legitimately differ from run to
// run: times, durations, versions, request ids and sizes of memory.
var volatile = []struct {
	re   *regexp.Regexp
	repl string
}{
	{regexp.MustCompile(`"(took_ms|build_duration_ms|memory_bytes|memory_needed_bytes|memory_limit_bytes)": ?[0-9.e+-]+`), `"$1":N`},
	{regexp.MustCompile(`"(built_at|last_error_at|next_retry_at|last_query_error_at|last_success|last_load_at)": ?"[^"]*"`), `"$1":"T"`},
	{regexp.MustCompile(`"(index_version|version|request_id|lexicon|search_id)": ?"[^"]*"`), `"$1":"V"`},
	{regexp.MustCompile(`index \d+-[0-9a-f]+\)`), `index V)`},
}

func normalise(s string) string {
	for _, v := range volatile {
		s = v.re.ReplaceAllString(s, v.repl)
	}
	return s
}

// matches reports whether got matches want, line by line after
// normalising: a want line "..." stands for any number of lines, and "..."
// inside a line for any text.
func matches(want, got []string) bool {
	if len(want) == 0 {
		return len(got) == 0
	}
	if want[0] == "..." {
		for i := 0; i <= len(got); i++ {
			if matches(want[1:], got[i:]) {
				return true
			}
		}
		return false
	}
	if len(got) == 0 {
		return false
	}
	w, g := normalise(want[0]), normalise(got[0])
	if strings.Contains(w, "...") {
		parts := strings.Split(w, "...")
		for i, p := range parts {
			parts[i] = regexp.QuoteMeta(p)
		}
		if !regexp.MustCompile(`^` + strings.Join(parts, ".*") + `$`).MatchString(g) {
			return false
		}
	} else if w != g {
		return false
	}
	return matches(want[1:], got[1:])
}

// documents are README.md and every file under docs/: what TestDocs runs.
func documents(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob("../../docs/*.md")
	if err != nil || len(docs) == 0 {
		t.Fatalf("no docs/*.md (%v)", err)
	}
	return append([]string{"../../README.md"}, docs...)
}

// pretty is a command's output as the docs show it: a JSON document
// indented two spaces a level (the service answers compactly), anything
// else as printed.
func pretty(out []byte) []string {
	trimmed := bytes.TrimSpace(out)
	if len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[') && json.Valid(trimmed) {
		var buf bytes.Buffer
		if json.Indent(&buf, trimmed, "", "  ") == nil {
			out = buf.Bytes()
		}
	}
	if len(bytes.TrimSpace(out)) == 0 {
		return nil
	}
	return strings.Split(strings.TrimRight(string(out), "\n"), "\n")
}

// TestDocs runs every "$" example in README.md and docs/*.md and compares
// its output with what the document shows, so an example cannot drift or
// lie. Each block runs against a fresh server started as its directive
// says (none: the default, as make run serves it); curl's localhost:8080
// is that server, and toolsearch is the binary built from this tree. A
// block that cannot run here says why in a "skip" directive, and the test
// names each. go test -run TestDocs -update (make docs) rewrites the
// outputs from real runs, JSON indented; outputs with "..." elisions are
// only checked.
func TestDocs(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatal("the docs' examples use curl, which is not installed")
	}
	bin := buildBinary(t)
	for _, path := range documents(t) {
		t.Run(filepath.Base(path), func(t *testing.T) { checkDocument(t, path, bin) })
	}
}

func checkDocument(t *testing.T, path, bin string) {
	name := strings.TrimPrefix(path, "../../")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(raw), "\n")
	root, _ := filepath.Abs("../..")
	type rewrite struct {
		from, to int
		out      []string
	}
	var rewrites []rewrite
	ran, skipped := 0, 0
	for _, b := range readmeBlocks(lines) {
		words := strings.Fields(b.directive)
		if len(words) > 0 && strings.TrimSuffix(words[0], ":") == "skip" {
			if len(words) < 2 {
				t.Errorf("%s:%d: a skip directive must say why", name, b.examples[0].line-1)
			}
			t.Logf("%s:%d: not run here (%d examples): %s", name, b.examples[0].line, len(b.examples), strings.Join(words[1:], " "))
			skipped += len(b.examples)
			continue
		}
		if len(words) > 0 && words[0] != "serve" {
			t.Errorf("%s:%d: unknown directive %q", name, b.examples[0].line-1, b.directive)
			continue
		}
		env, args := map[string]string{}, []string{}
		for _, w := range words[min(1, len(words)):] {
			if k, v, ok := strings.Cut(w, "="); ok && strings.ToUpper(k) == k && !strings.HasPrefix(k, "-") {
				env[k] = v
			} else {
				args = append(args, w)
			}
		}
		base, logs, stop := startServe(t, env, args...)
		for _, e := range b.examples {
			cmd := e.cmd
			if i := strings.Index(cmd, "   #"); i >= 0 {
				cmd = strings.TrimSpace(cmd[:i]) // a comment for the reader
			}
			switch {
			case strings.HasPrefix(cmd, "curl "):
				cmd = strings.ReplaceAll(cmd, "localhost:8080", strings.TrimPrefix(base, "http://"))
				if strings.Contains(cmd, "localhost:9090") {
					cmd = strings.ReplaceAll(cmd, "localhost:9090", strings.TrimPrefix(metricsBase(t, logs), "http://"))
				}
			case strings.HasPrefix(cmd, "toolsearch "):
				cmd = bin + strings.TrimPrefix(cmd, "toolsearch")
			default:
				t.Errorf("%s:%d: %q is neither curl nor toolsearch: run it here or skip its block with a reason", name, e.line, e.cmd)
				continue
			}
			c := exec.Command("sh", "-c", cmd)
			c.Dir = root
			out, _ := c.Output() // an exit status is part of what the example shows
			ran++
			got := pretty(out)
			if matches(e.out, got) {
				continue
			}
			elided := slices.ContainsFunc(e.out, func(l string) bool { return strings.Contains(l, "...") })
			if *update && !elided {
				rewrites = append(rewrites, rewrite{e.line, e.end, got})
				continue
			}
			t.Errorf("%s:%d: %s\nthe document shows:\n%s\nthe command prints:\n%s\nserver log:\n%s",
				name, e.line, e.cmd, strings.Join(e.out, "\n"), strings.Join(got, "\n"), logs)
		}
		stop()
	}
	t.Logf("%s: %d examples run and checked, %d in blocks not run here", name, ran, skipped)
	if len(rewrites) == 0 {
		return
	}
	slices.Reverse(rewrites) // from the end, so earlier line numbers hold
	for _, r := range rewrites {
		var out []string
		for _, l := range r.out {
			out = append(out, strings.TrimRight("    "+l, " "))
		}
		lines = slices.Replace(lines, r.from, r.to, out...)
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	fmt.Printf("rewrote %d outputs in %s\n", len(rewrites), name)
}
