package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/toolsearch/toolsearch/pkg/lint"
)

func runLint(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	e := &env{getenv: getenv}
	fs := newFlagSet("lint", stderr)
	near := fs.Float64("near-duplicate", 0.9, "report tool pairs whose texts' cosine is at least this (warning; 0.98 and over is an error)")
	minWords := fs.Int("min-description-words", 4, "descriptions with fewer words are very short")
	maxBytes := fs.Int("max-description-bytes", 2048, "description size budget")
	format := fs.String("format", "text", "text or json")
	failSkipped := fs.Bool("fail-skipped", false, "exit 1 when a check could not run (near-duplicates need embeddings: an unreachable provider skips them)")
	idx := addIndexFlags(fs, e, false)
	if err := parseIndex(fs, e, idx, args, false); err != nil {
		return err
	}
	warnEnv(stderr, idx)
	fail := func(code int, err error) error {
		fmt.Fprintln(stderr, "toolsearch lint:", err)
		return exitCode(code)
	}
	switch {
	case *format != "text" && *format != "json":
		return fail(2, fmt.Errorf("-format must be text or json, got %q", *format))
	case *near <= 0 || *near > 1:
		// A cosine over 1 reports no pair, and one of 0 or under every pair.
		return fail(2, fmt.Errorf("-near-duplicate must be in (0, 1], got %v", *near))
	case *minWords < 0:
		return fail(2, fmt.Errorf("-min-description-words must not be negative, got %d", *minWords))
	case *maxBytes < 1:
		return fail(2, fmt.Errorf("-max-description-bytes must be at least 1, got %d", *maxBytes))
	}
	svc, cat, err := buildService(ctx, idx, false, stderr)
	if err != nil {
		return fail(2, err)
	}
	var vecs [][]float32
	// Every check but near-duplicates reads the catalog alone; that one
	// needs the embedder, which may be a provider out of reach.
	ran := slices.Clone(lint.CatalogChecks)
	skipped := map[string]string{}
	if snap := svc.Current(); snap.Semantic() {
		vecs = snap.Matrix.Vectors()
		ran = append(ran, lint.NearDuplicates)
	} else {
		skipped[lint.NearDuplicates] = "no embeddings from the " + idx.embedder + " embedder: " + snap.EmbedError
	}
	findings := lint.Check(cat, vecs, lint.Config{NearDuplicate: float32(*near), MinDescription: *minWords, MaxDescription: *maxBytes})
	errs, warns := 0, 0
	for _, f := range findings {
		if f.Severity == lint.Error {
			errs++
		} else {
			warns++
		}
	}
	if *format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if findings == nil {
			findings = []lint.Finding{}
		}
		if err := enc.Encode(map[string]any{"tools": cat.Len(), "errors": errs, "warnings": warns, "findings": findings,
			"checks": map[string]any{"ran": ran, "skipped": skipped}}); err != nil {
			return err
		}
	} else {
		for _, f := range findings {
			fmt.Fprintf(stdout, "%-7s %-18s %s: %s\n", f.Severity, f.Rule, shownName(f.Tool), printable(f.Message))
		}
		fmt.Fprintf(stdout, "%d tools in %s: %d errors, %d warnings\n", cat.Len(), strings.Join(cat.Sources(), ","), errs, warns)
		fmt.Fprintf(stdout, "checks run: %s\n", strings.Join(ran, ", "))
		for name, why := range skipped {
			fmt.Fprintf(stdout, "check skipped: %s (%s)\n", name, why)
		}
	}
	switch {
	case errs > 0:
		return exitCode(1)
	case len(skipped) > 0 && *failSkipped:
		fmt.Fprintln(stderr, "toolsearch lint: a check was skipped and -fail-skipped is set")
		return exitCode(1)
	}
	return nil
}
