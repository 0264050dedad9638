package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/toolsearch/toolsearch/pkg/eval"
	"github.com/toolsearch/toolsearch/pkg/search"
)

func runQuery(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	e := &env{getenv: getenv}
	fs := newFlagSet("query", stderr)
	k := fs.Int("k", 10, "how many tools to print")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	idx := addIndexFlags(fs, e)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), `usage: toolsearch query [flags] "what you want to do"`)
		fs.PrintDefaults()
	}
	if err := parse(fs, e, args); err != nil {
		return err
	}
	query := strings.TrimSpace(strings.Join(fs.Args(), " "))
	if query == "" {
		fs.Usage()
		return exitCode(2)
	}
	if *k < 1 || *k > search.MaxTopK {
		return fmt.Errorf("-k must be between 1 and %d, got %d", search.MaxTopK, *k)
	}
	svc, _, err := buildService(ctx, idx)
	if err != nil {
		return err
	}
	res, err := svc.Search(ctx, search.Request{Query: query, TopK: *k})
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"tools": res.Tools, "mode": res.Mode, "index_version": res.IndexVersion})
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "rank\tscore\ttool\tdescription\n")
	for i, h := range res.Tools {
		fmt.Fprintf(tw, "%d\t%.4f\t%s\t%s\n", i+1, h.Score, eval.ToolKey{Server: h.Server, Name: h.Name}, clip(h.Description, 70))
	}
	fmt.Fprintf(tw, "(mode %s, index %s)\n", res.Mode, res.IndexVersion)
	return tw.Flush()
}

// clip shortens s to n runes for a one-line listing.
func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
