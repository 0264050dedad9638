package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"unicode"

	"github.com/toolsearch/toolsearch/pkg/access"
	"github.com/toolsearch/toolsearch/pkg/analysis"
	"github.com/toolsearch/toolsearch/pkg/eval"
	"github.com/toolsearch/toolsearch/pkg/search"
	"github.com/toolsearch/toolsearch/pkg/tooldef"
)

func runQuery(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	e := &env{getenv: getenv}
	fs := newFlagSet("query", stderr)
	k := fs.Int("k", 10, "how many tools to rank")
	asJSON := fs.Bool("json", false, "print the whole response as JSON")
	mode := fs.String("mode", "", "hybrid, semantic or keyword; default: the service's")
	withCore := fs.Bool("core", false, "append the core tools, as the endpoint does")
	format := fs.String("format", "", "also render the tools' definitions for a provider ("+strings.Join(tooldef.Formats, ", ")+"), as the endpoint's \"format\" does; prints JSON")
	idx := addIndexFlags(fs, e, true)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), `usage: toolsearch query [flags] "what you want to do"`)
		fs.PrintDefaults()
	}
	if err := parseIndex(fs, e, idx, args, true); err != nil {
		return err
	}
	warnEnv(stderr, idx)
	query := strings.TrimSpace(strings.Join(fs.Args(), " "))
	if query == "" {
		fs.Usage()
		return exitCode(2)
	}
	if *k < 1 || *k > search.MaxTopK {
		fmt.Fprintf(stderr, "toolsearch query: -k must be between 1 and %d, got %d\n", search.MaxTopK, *k)
		return exitCode(2)
	}
	// Checked before the index is built, which takes seconds at scale.
	if !search.Mode(*mode).Requestable() {
		fmt.Fprintf(stderr, "toolsearch query: -mode must be hybrid, semantic or keyword, got %q\n", *mode)
		return exitCode(2)
	}
	if *format != "" && !tooldef.Valid(*format) {
		fmt.Fprintf(stderr, "toolsearch query: -format must be one of %s, got %q\n", strings.Join(tooldef.Formats, ", "), *format)
		return exitCode(2)
	}
	svc, _, err := buildService(ctx, idx, true, stderr)
	if err != nil {
		return err
	}
	res, err := svc.Search(ctx, search.Request{Query: query, TopK: k, Mode: search.Mode(*mode), IncludeCore: withCore, Format: *format}, access.Caller{})
	if err != nil {
		return err
	}
	if *asJSON || *format != "" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "rank\tscore\ttool\tdescription\n")
	for i, h := range res.Tools {
		score := string(h.Source)
		if h.Score != nil {
			score = fmt.Sprintf("%.4f", *h.Score)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", i+1, score, shownName(eval.ToolKey{Server: h.Server, Name: h.Name}.String()), clip(h.Description, 70))
	}
	note := ""
	if res.Degraded {
		note = ", degraded: " + res.Diagnostic.EmbeddingError
	}
	fmt.Fprintf(tw, "(mode %s, index %s%s)\n", res.Mode, res.IndexVersion, note)
	return tw.Flush()
}

// clip shortens s to n runes for a one-line listing, printable.
func clip(s string, n int) string {
	s = strings.Join(strings.Fields(printable(s)), " ")
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// shownName is a tool's name or ID for a terminal: its characters no
// reader sees (format characters, bidirectional controls among them, and
// variation selectors) written as \u escapes, so that de\u00ADlete_rows
// does not show as delete_rows, nor a bidirectional override reorder the
// line; and in a name that reads as another (analysis.Fold), its letters
// of other scripts drawn as Latin ones too, so that d\u0435lete_rows can
// be told from delete_rows. Control characters never reach a name
// (catalog.checkName).
func shownName(s string) string {
	if analysis.IsASCII(s) {
		return s
	}
	mixed := analysis.Fold(s) != s
	var b strings.Builder
	for _, r := range s {
		switch {
		case mixed && analysis.IsLookalike(r):
			fmt.Fprintf(&b, `\u%04X`, r) // every one is under U+10000
		case !unicode.In(r, unicode.Cf, unicode.Variation_Selector, unicode.Other_Default_Ignorable_Code_Point):
			b.WriteRune(r)
		case r > 0xFFFF:
			fmt.Fprintf(&b, `\U%08X`, r)
		default:
			fmt.Fprintf(&b, `\u%04X`, r)
		}
	}
	return b.String()
}

// printable is s for a terminal: its control characters but spaces (an
// upstream's description or parameter names may carry terminal escapes)
// and its bidirectional controls shown as U+FFFD.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) && !unicode.IsSpace(r) || unicode.Is(unicode.Bidi_Control, r) {
			return unicode.ReplacementChar
		}
		return r
	}, s)
}
