// Package snapshot stores an index's vectors in a file, so that replicas
// load them instead of each paying for the embedding call. A file is
// versioned, says what it was built from (embedder, model, dimensions,
// catalog hash), and is checksummed: a corrupt or truncated file is an
// error, never a wrong index.
package snapshot

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"time"
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

// Write writes h and vecs (h.Tools rows of h.Dimensions) to w.
func Write(w io.Writer, h Header, vecs [][]float32) error {
	h.Format = Format
	if len(vecs) != h.Tools {
		return fmt.Errorf("snapshot: %d vectors for %d tools", len(vecs), h.Tools)
	}
	hdr, err := json.Marshal(h)
	if err != nil {
		return err
	}
	sum := sha256.New()
	out := io.MultiWriter(w, sum)
	var buf bytes.Buffer
	buf.Write(magic[:])
	binary.Write(&buf, binary.LittleEndian, uint32(len(hdr)))
	buf.Write(hdr)
	if _, err := out.Write(buf.Bytes()); err != nil {
		return err
	}
	row := make([]byte, 4*h.Dimensions)
	for i, v := range vecs {
		if len(v) != h.Dimensions {
			return fmt.Errorf("snapshot: vector %d has %d dimensions, want %d", i, len(v), h.Dimensions)
		}
		for j, x := range v {
			binary.LittleEndian.PutUint32(row[4*j:], math.Float32bits(x))
		}
		if _, err := out.Write(row); err != nil {
			return err
		}
	}
	_, err = w.Write(sum.Sum(nil))
	return err
}

// Read parses a whole snapshot. Any damage, including a single flipped
// bit, is an error wrapping ErrCorrupt.
func Read(data []byte) (Header, [][]float32, error) {
	var h Header
	if len(data) < len(magic)+4+sha256.Size {
		return h, nil, fmt.Errorf("%w: %d bytes", ErrCorrupt, len(data))
	}
	if !bytes.Equal(data[:8], magic[:]) {
		return h, nil, fmt.Errorf("%w: not a toolsearch snapshot", ErrCorrupt)
	}
	body, sum := data[:len(data)-sha256.Size], data[len(data)-sha256.Size:]
	if got := sha256.Sum256(body); !bytes.Equal(got[:], sum) {
		return h, nil, fmt.Errorf("%w: checksum mismatch", ErrCorrupt)
	}
	n := binary.LittleEndian.Uint32(body[8:12])
	if n > maxHeader || int(n) > len(body)-12 {
		return h, nil, fmt.Errorf("%w: header length %d", ErrCorrupt, n)
	}
	dec := json.NewDecoder(bytes.NewReader(body[12 : 12+n]))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&h); err != nil {
		return h, nil, fmt.Errorf("%w: header: %v", ErrCorrupt, err)
	}
	if h.Format != Format {
		return h, nil, fmt.Errorf("snapshot format %d; this build reads format %d", h.Format, Format)
	}
	payload := body[12+n:]
	if h.Tools < 0 || h.Dimensions <= 0 || int64(len(payload)) != int64(h.Tools)*int64(h.Dimensions)*4 {
		return h, nil, fmt.Errorf("%w: %d bytes of vectors for %d tools of %d dimensions", ErrCorrupt, len(payload), h.Tools, h.Dimensions)
	}
	vecs := make([][]float32, h.Tools)
	flat := make([]float32, h.Tools*h.Dimensions)
	for i := range flat {
		x := math.Float32frombits(binary.LittleEndian.Uint32(payload[4*i:]))
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return h, nil, fmt.Errorf("%w: non-finite value", ErrCorrupt)
		}
		flat[i] = x
	}
	for i := range vecs {
		vecs[i] = flat[i*h.Dimensions : (i+1)*h.Dimensions]
	}
	return h, vecs, nil
}

// ReadFile reads the snapshot at path.
func ReadFile(path string) (Header, [][]float32, error) {
	f, err := os.Open(path)
	if err != nil {
		return Header{}, nil, fmt.Errorf("snapshot: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxBytes+1))
	if err != nil {
		return Header{}, nil, fmt.Errorf("snapshot %s: %w", path, err)
	}
	if len(data) > maxBytes {
		return Header{}, nil, fmt.Errorf("snapshot %s: larger than %d GiB", path, maxBytes>>30)
	}
	h, vecs, err := Read(data)
	if err != nil {
		return h, nil, fmt.Errorf("snapshot %s: %w", path, err)
	}
	return h, vecs, nil
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
