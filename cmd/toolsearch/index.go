package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
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
	warnEnv(stderr)
	if *out == "" {
		fmt.Fprintln(stderr, "toolsearch index: -out is required")
		return exitCode(2)
	}
	// The file is made before the index, so that a directory that cannot
	// take it fails at once, not after a provider embedded every tool.
	// Written whole to it, then renamed, so a reader never sees half a file.
	tmp, err := os.CreateTemp(filepath.Dir(*out), ".toolsearch-snapshot-*")
	if err != nil {
		return fmt.Errorf("-out %s: %w", *out, err)
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	svc, cat, err := buildService(ctx, idx, stderr)
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
	vecs := snap.Matrix.Vectors()
	if err := snapshot.Write(tmp, h, vecs); err != nil {
		return fmt.Errorf("write %s: %w", *out, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", *out, err)
	}
	// CreateTemp makes the file 0600. A snapshot holds vectors and the
	// model's name, no secret, and is made to be copied into an image that
	// runs as another user (distroless nonroot, 65532): readable by all.
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", *out, err)
	}
	if err := os.Rename(tmp.Name(), *out); err != nil {
		return fmt.Errorf("write %s: %w", *out, err)
	}
	st, _ := os.Stat(*out)
	fmt.Fprintf(stdout, "wrote %s: %d tools × %d dimensions (%s/%s), catalog %.12s, %d bytes\n",
		*out, h.Tools, h.Dimensions, h.Provider, h.Model, h.CatalogHash, st.Size())
	return nil
}
