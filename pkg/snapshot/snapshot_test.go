package snapshot

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/toolsearch/toolsearch/pkg/index"
)

func sample() (Header, [][]float32) {
	h := Header{Provider: "local", Model: "m", Dimensions: 3, CatalogHash: "abc", Tools: 2, BuiltAt: time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)}
	return h, [][]float32{{1, 0, -0.5}, {0.25, 2, 3}}
}

// read decodes a whole snapshot held in memory, and returns its index's
// rows.
func read(data []byte) (Header, [][]float32, error) {
	h, mx, err := decode(bytes.NewReader(data), int64(len(data)))
	if mx == nil {
		return h, nil, err
	}
	return h, mx.Vectors(), err
}

// write is Write of vecs.
func write(w io.Writer, h Header, vecs [][]float32) error { return Write(w, h, slices.All(vecs)) }

// normalized is vecs as an index holds them.
func normalized(vecs [][]float32) [][]float32 {
	out := make([][]float32, len(vecs))
	for i, v := range vecs {
		out[i] = slices.Clone(v)
		index.Normalize(out[i])
	}
	return out
}

func TestRoundTrip(t *testing.T) {
	h, vecs := sample()
	var buf bytes.Buffer
	if err := write(&buf, h, vecs); err != nil {
		t.Fatal(err)
	}
	gh, gv, err := read(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	h.Format = Format
	if diff := cmp.Diff(h, gh); diff != "" {
		t.Errorf("header mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(normalized(vecs), gv); diff != "" {
		t.Errorf("vectors mismatch (-want +got):\n%s", diff)
	}
}

// Write refuses a count of rows or a width other than the header's.
func TestWriteCounts(t *testing.T) {
	h, vecs := sample()
	for _, tt := range []struct {
		name string
		vecs [][]float32
	}{
		{"fewer rows", vecs[:1]},
		{"more rows", append(slices.Clone(vecs), []float32{1, 2, 3})},
		{"a narrower row", [][]float32{vecs[0], {1, 2}}},
	} {
		if err := write(&bytes.Buffer{}, h, tt.vecs); err == nil {
			t.Errorf("%s: written", tt.name)
		}
	}
}

// Every single-byte flip and every truncation is caught.
func TestDamage(t *testing.T) {
	h, vecs := sample()
	var buf bytes.Buffer
	write(&buf, h, vecs)
	good := buf.Bytes()
	for i := range good {
		bad := bytes.Clone(good)
		bad[i] ^= 0x01
		if _, _, err := read(bad); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("flipping byte %d: error = %v, want ErrCorrupt", i, err)
		}
	}
	for n := range len(good) {
		if _, _, err := read(good[:n]); err == nil {
			t.Fatalf("truncated to %d bytes: no error", n)
		}
	}
}

// ReadFile streams the file: what Read gives, and damage, truncation
// and growth caught.
func TestReadFile(t *testing.T) {
	h, vecs := sample()
	var buf bytes.Buffer
	write(&buf, h, vecs)
	good := buf.Bytes()
	dir := t.TempDir()
	for name, tc := range map[string]struct {
		data []byte
		ok   bool
	}{
		"whole":     {good, true},
		"flipped":   {append(bytes.Clone(good[:len(good)-40]), append([]byte{good[len(good)-40] ^ 0x10}, good[len(good)-39:]...)...), false},
		"truncated": {good[:len(good)-1], false},
		"grown":     {append(bytes.Clone(good), 0), false},
		"empty":     {nil, false},
	} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, tc.data, 0o644); err != nil {
			t.Fatal(err)
		}
		gh, mx, err := ReadFile(path)
		if !tc.ok {
			if !errors.Is(err, ErrCorrupt) {
				t.Errorf("%s: error = %v, want ErrCorrupt", name, err)
			}
			continue
		}
		h.Format = Format
		if err != nil || !cmp.Equal(h, gh) || !cmp.Equal(normalized(vecs), mx.Vectors()) {
			t.Errorf("%s: %v %+v %v", name, err, gh, mx)
		}
	}
}

func TestMismatch(t *testing.T) {
	h, _ := sample()
	tests := []struct {
		provider, model string
		dims            int
		hash            string
		tools           int
		want            bool
	}{
		{"local", "m", 3, "abc", 2, false},
		{"local", "m", 0, "abc", 2, false},
		{"openai", "m", 3, "abc", 2, true},
		{"local", "m", 4, "abc", 2, true},
		{"local", "m", 3, "abd", 2, true},
	}
	for _, tt := range tests {
		if got := h.Mismatch(tt.provider, tt.model, "", tt.dims, tt.hash, tt.tools); (got != "") != tt.want {
			t.Errorf("Mismatch(%+v) = %q", tt, got)
		}
	}
}

func FuzzRead(f *testing.F) {
	h, vecs := sample()
	var buf bytes.Buffer
	write(&buf, h, vecs)
	f.Add(buf.Bytes())
	f.Add([]byte("TSSNAP01"))
	f.Fuzz(func(t *testing.T, data []byte) {
		h, vecs, err := read(data)
		if err != nil {
			return
		}
		if len(vecs) != h.Tools {
			t.Fatalf("%d vectors for %d tools", len(vecs), h.Tools)
		}
		for _, v := range vecs {
			if len(v) != h.Dimensions {
				t.Fatalf("vector of %d, want %d", len(v), h.Dimensions)
			}
		}
	})
}
