// Command catgen writes a synthetic tool catalog of any size (package
// catgen says what it looks like), for the start-up, memory and
// query measurements at scale (BENCHMARKS.md, make load). The same -seed
// writes the same catalog.
//
//	go run ./cmd/catgen -tools 100000 -out /tmp/catalog-100k.json
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/toolsearch/toolsearch/pkg/catgen"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "catgen:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("catgen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	tools := fs.Int("tools", 10_000, "how many tools")
	seed := fs.Uint64("seed", 1, "the random seed: the same seed writes the same catalog")
	out := fs.String("out", "-", "where to write the catalog JSON (- for stdout)")
	text := fs.Int("text", 1, "how many times as long each tool's text is (descriptions and parameters): 1 is about 440 bytes a tool")
	script := fs.String("script", "", `the descriptions' letters: "" (English's) or "cyrillic" (each Latin letter as a Cyrillic one)`)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *tools < 1 {
		return fmt.Errorf("-tools must be at least 1, got %d", *tools)
	}
	if *text < 1 {
		return fmt.Errorf("-text must be at least 1, got %d", *text)
	}
	if err := catgen.CheckScript(*script); err != nil {
		return fmt.Errorf("-script %w", err)
	}
	w := stdout
	if *out != "-" {
		f, err := os.Create(*out)
		if err != nil {
			return err
		}
		defer f.Close()
		w = f
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	if err := (catgen.Spec{Tools: *tools, Seed: *seed, Text: *text, Script: *script}).Write(bw); err != nil {
		return err
	}
	return bw.Flush()
}
