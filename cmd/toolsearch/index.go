package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/toolsearch/toolsearch/pkg/redact"
	"github.com/toolsearch/toolsearch/pkg/snapshot"
)

// runIndex embeds the catalog once and writes an index snapshot, so that
// every replica can load it instead of calling the provider.
func runIndex(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	e := &env{getenv: getenv}
	fs := newFlagSet("index", stderr)
	out := fs.String("out", "", "write the snapshot to this `file` (required); with SOURCE_DATE_EPOCH set, built at that time, so that one catalog's snapshot is the same bytes each time")
	idx := addIndexFlags(fs, e, false)
	if err := parseIndex(fs, e, idx, args, false); err != nil {
		return err
	}
	warnEnv(stderr, idx)
	if *out == "" {
		fmt.Fprintln(stderr, "toolsearch index: -out is required")
		return exitCode(2)
	}
	built, err := buildTime(getenv("SOURCE_DATE_EPOCH"), time.Now)
	if err != nil {
		fmt.Fprintln(stderr, "toolsearch index:", err)
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
		CatalogHash: cat.Hash(), Tools: cat.Len(), BuiltAt: built}
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

// buildTime is when a snapshot says it was built: now, or, for a build
// that must come out the same byte for byte (a snapshot made in CI and
// shipped in an image), the time SOURCE_DATE_EPOCH gives in seconds, as
// reproducible builds set it (reproducible-builds.org/specs).
func buildTime(epoch string, now func() time.Time) (time.Time, error) {
	if epoch == "" {
		return now().UTC(), nil
	}
	secs, err := strconv.ParseInt(epoch, 10, 64)
	if err != nil || secs < 0 || secs > maxEpoch {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH must be whole seconds since 1970 such as 1767225600, got %q", redact.Clip(epoch, redact.MaxEcho, "…"))
	}
	return time.Unix(secs, 0).UTC(), nil
}

// maxEpoch is the year 9999's end: JSON's times (RFC 3339) have four
// digits of year.
const maxEpoch = 253402300799
