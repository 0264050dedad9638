package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/toolsearch/toolsearch/pkg/snapshot"
)

// runIndex embeds the catalog once and writes an index snapshot, so that
// every replica can load it instead of calling the provider.
func runIndex(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	e := &env{getenv: getenv}
	fs := newFlagSet("index", stderr)
	out := fs.String("out", "", "write the snapshot to this `file` (required)")
	idx := addIndexFlags(fs, e, false)
	if err := parseIndex(fs, e, idx, args, false); err != nil {
		return err
	}
	warnEnv(stderr, idx)
	if *out == "" {
		fmt.Fprintln(stderr, "toolsearch index: -out is required")
		return exitCode(2)
	}
	// Made before the index: a path that cannot take the file fails at
	// once, not after a provider embedded every tool (see createOut).
	tmp, err := createOut(*out)
	if err != nil {
		return err
	}
	defer tmp.discard()
	svc, cat, err := buildService(ctx, idx, false, stderr)
	if err != nil {
		return err
	}
	snap := svc.Current()
	if !snap.Semantic() {
		return fmt.Errorf("not writing a snapshot without embeddings: %s", snap.EmbedError)
	}
	info := svc.Status().Embedder
	h := snapshot.Header{Provider: info.Provider, Model: info.Model, BaseURL: info.BaseURL, Dimensions: snap.Matrix.Dim(),
		CatalogHash: cat.Hash(), Tools: cat.Len(), BuiltAt: time.Now().UTC()}
	if err := snapshot.Write(tmp, h, snap.Matrix.All()); err != nil {
		return fmt.Errorf("write %s: %w", *out, err)
	}
	if err := tmp.commit(); err != nil {
		return err
	}
	st, _ := os.Stat(*out)
	fmt.Fprintf(stdout, "wrote %s: %d tools × %d dimensions (%s/%s), catalog %.12s, %d bytes\n",
		*out, h.Tools, h.Dimensions, h.Provider, h.Model, h.CatalogHash, st.Size())
	return nil
}
