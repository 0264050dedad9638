// Package snapshot stores an index's vectors in a file, so that replicas
// load them instead of each paying for the embedding call. A file is
// versioned, says what it was built from (embedder, model, dimensions,
// catalog hash), and is checksummed: a corrupt or truncated file is an
// error, never a wrong index.
package snapshot

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"iter"
	"math"
	"os"
	"time"

	"github.com/toolsearch/toolsearch/pkg/index"
)

// Layout: magic (8 bytes) | header length (uint32 LE) | header JSON |
// vectors (rows × dims float32 LE) | SHA-256 of all that precedes it.
var magic = [8]byte{'T', 'S', 'S', 'N', 'A', 'P', '0', '1'}

// Format is the header's format version.
const Format = 1

const (
	maxHeader = 1 << 20
	maxBytes  = 4 << 30 // 4 GiB: a million tools at 1024 dimensions
)

// Header says what a snapshot was built from.
type Header struct {
	Format      int       `json:"format"`
	Provider    string    `json:"provider"`
	Model       string    `json:"model"`
	BaseURL     string    `json:"base_url,omitempty"`
	Dimensions  int       `json:"dimensions"`
	CatalogHash string    `json:"catalog_hash"`
	Tools       int       `json:"tools"`
	BuiltAt     time.Time `json:"built_at"`
}

// ErrCorrupt marks a file that is not a whole, intact snapshot.
var ErrCorrupt = errors.New("snapshot corrupt or truncated")

// Write writes h and its h.Tools rows of h.Dimensions to w, the rows in
// order as an index's All yields them, each valid only until the next:
// an index kept by column is written without a dense copy of it.
func Write(w io.Writer, h Header, rows iter.Seq2[int, []float32]) error {
	h.Format = Format
	hdr, err := json.Marshal(h)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	sum := sha256.New()
	out := io.MultiWriter(bw, sum)
	var buf bytes.Buffer
	buf.Write(magic[:])
	binary.Write(&buf, binary.LittleEndian, uint32(len(hdr)))
	buf.Write(hdr)
	if _, err := out.Write(buf.Bytes()); err != nil {
		return err
	}
	row := make([]byte, 4*h.Dimensions)
	n := 0
	for _, v := range rows {
		if n == h.Tools {
			return fmt.Errorf("snapshot: more vectors than %d tools", h.Tools)
		}
		if len(v) != h.Dimensions {
			return fmt.Errorf("snapshot: vector %d has %d dimensions, want %d", n, len(v), h.Dimensions)
		}
		for j, x := range v {
			binary.LittleEndian.PutUint32(row[4*j:], math.Float32bits(x))
		}
		if _, err := out.Write(row); err != nil {
			return err
		}
		n++
	}
	if n != h.Tools {
		return fmt.Errorf("snapshot: %d vectors for %d tools", n, h.Tools)
	}
	if _, err := bw.Write(sum.Sum(nil)); err != nil {
		return err
	}
	return bw.Flush()
}

// ReadFile reads the snapshot at path into an index of its vectors,
// normalised as every index's are; nil for a snapshot of no tools. Any
// damage, including a single flipped bit, is an error wrapping
// ErrCorrupt. It streams the file into the index's rows, so neither the
// file's bytes nor a copy of its vectors is held beside the index: at
// 100,000 tools of 1,536 dimensions, each would be 586 MiB more at
// start-up.
func ReadFile(path string) (Header, *index.Matrix, error) {
	f, err := os.Open(path)
	if err != nil {
		return Header{}, nil, fmt.Errorf("snapshot: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return Header{}, nil, fmt.Errorf("snapshot: %w", err)
	}
	if st.Size() > maxBytes {
		return Header{}, nil, fmt.Errorf("snapshot %s: larger than %d GiB", path, maxBytes>>30)
	}
	h, mx, err := decode(bufio.NewReaderSize(f, 1<<16), st.Size())
	if err != nil {
		return h, nil, fmt.Errorf("snapshot %s: %w", path, err)
	}
	return h, mx, nil
}

// decode reads a snapshot of size bytes from r. The checksum is summed as
// the file is read and compared at its end, before anything is returned.
func decode(r io.Reader, size int64) (Header, *index.Matrix, error) {
	var h Header
	if size < int64(len(magic)+4+sha256.Size) {
		return h, nil, fmt.Errorf("%w: %d bytes", ErrCorrupt, size)
	}
	sum := sha256.New()
	body := io.TeeReader(io.LimitReader(r, size-sha256.Size), sum)
	var start [12]byte
	if _, err := io.ReadFull(body, start[:]); err != nil {
		return h, nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if !bytes.Equal(start[:8], magic[:]) {
		return h, nil, fmt.Errorf("%w: not a toolsearch snapshot", ErrCorrupt)
	}
	n := binary.LittleEndian.Uint32(start[8:12])
	if n > maxHeader || int64(n) > size-sha256.Size-12 {
		return h, nil, fmt.Errorf("%w: header length %d", ErrCorrupt, n)
	}
	hdr := make([]byte, n)
	if _, err := io.ReadFull(body, hdr); err != nil {
		return h, nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	// The header is read before the sum is known: its counts size the
	// vectors (checked against the file's size before anything is
	// allocated for them). A header that cannot be used is reported as
	// damage when the sum says so, so that a flipped bit in it is
	// ErrCorrupt like any other.
	checked := func(err error) error {
		if _, cerr := io.Copy(io.Discard, body); cerr != nil {
			return fmt.Errorf("%w: %v", ErrCorrupt, cerr)
		}
		if !sound(r, sum) {
			return fmt.Errorf("%w: checksum mismatch", ErrCorrupt)
		}
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(hdr))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&h); err != nil {
		return h, nil, checked(fmt.Errorf("%w: header: %v", ErrCorrupt, err))
	}
	if h.Format != Format {
		return h, nil, checked(fmt.Errorf("snapshot format %d; this build reads format %d", h.Format, Format))
	}
	payload := size - sha256.Size - 12 - int64(n)
	if h.Tools < 0 || h.Dimensions <= 0 || payload != int64(h.Tools)*int64(h.Dimensions)*4 {
		return h, nil, checked(fmt.Errorf("%w: %d bytes of vectors for %d tools of %d dimensions", ErrCorrupt, payload, h.Tools, h.Dimensions))
	}
	var mx *index.Matrix // none for a snapshot of no tools
	if h.Tools > 0 {
		d, err := index.NewBlankDraft(h.Tools, h.Dimensions)
		if err != nil {
			return h, nil, err
		}
		buf := make([]byte, 4*h.Dimensions)
		for i := range h.Tools {
			if _, err := io.ReadFull(body, buf); err != nil {
				return h, nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
			}
			row := d.Row(i)
			for j := range row {
				x := math.Float32frombits(binary.LittleEndian.Uint32(buf[4*j:]))
				if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
					return h, nil, fmt.Errorf("%w: non-finite value", ErrCorrupt)
				}
				row[j] = x
			}
		}
		mx = d.Matrix()
	}
	if !sound(r, sum) {
		return h, nil, fmt.Errorf("%w: checksum mismatch", ErrCorrupt)
	}
	return h, mx, nil
}

// sound reads the checksum that ends r and compares it with sum, of all
// that preceded it.
func sound(r io.Reader, sum hash.Hash) bool {
	var want [sha256.Size]byte
	if _, err := io.ReadFull(r, want[:]); err != nil {
		return false
	}
	return bytes.Equal(sum.Sum(nil), want[:])
}

// Mismatch says why a snapshot cannot serve a catalog and embedder, or ""
// when it can.
func (h Header) Mismatch(provider, model, baseURL string, dims int, catalogHash string, tools int) string {
	switch {
	case h.Provider != provider || h.Model != model:
		return fmt.Sprintf("built with %s/%s, serving with %s/%s", h.Provider, h.Model, provider, model)
	case h.BaseURL != baseURL:
		return fmt.Sprintf("built against %s, serving against %s", h.BaseURL, baseURL)
	case dims != 0 && h.Dimensions != dims:
		return fmt.Sprintf("built with %d dimensions, serving with %d", h.Dimensions, dims)
	case h.CatalogHash != catalogHash || h.Tools != tools:
		return fmt.Sprintf("built from catalog %.12s (%d tools), serving catalog %.12s (%d tools)", h.CatalogHash, h.Tools, catalogHash, tools)
	}
	return ""
}
