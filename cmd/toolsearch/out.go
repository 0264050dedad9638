package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// checkOut fails when -out path could not be written, before the work
// whose result goes there, and changes nothing: an existing file is
// opened for writing and closed, a missing one made and removed (a device
// or a FIFO is left to the end: opening a FIFO waits for its reader).
func checkOut(path string) error {
	fi, err := os.Lstat(path)
	switch {
	case err == nil && fi.IsDir():
		return fmt.Errorf("-out %s: is a directory", path)
	case err == nil && !fi.Mode().IsRegular() && fi.Mode()&os.ModeSymlink == 0:
		return nil
	case err == nil:
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return fmt.Errorf("-out %s: %w", path, err)
		}
		return f.Close()
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("-out %s: %w", path, err)
	}
	f.Close()
	return os.Remove(path)
}

// outFile is what index writes its -out to. Where path is a regular
// file, or nothing yet, that is a file beside it, renamed over it once
// whole: a server starting meanwhile never reads half a snapshot, and a
// failed run leaves the last one as it was. Where path is something
// else, a device, a FIFO or a symbolic link, it is path itself, opened
// for writing: renamed over, /dev/null was replaced by a regular file
// (index -out /dev/null, as root), and a link by a file of its own.
type outFile struct {
	*os.File
	path string
	temp bool // the file is beside path, to be renamed over it
}

// createOut makes the file -out path is written through, before the work
// whose result it takes: a path that cannot be written fails at once.
func createOut(path string) (*outFile, error) {
	if fi, err := os.Lstat(path); err == nil && !fi.Mode().IsRegular() {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
		if err != nil {
			return nil, fmt.Errorf("-out %s: %w", path, err)
		}
		return &outFile{File: f, path: path}, nil
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".toolsearch-out-*")
	if err != nil {
		// The error names the temporary file, which the caller never chose.
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = fmt.Errorf("cannot write in %s: %w", filepath.Dir(path), pe.Err)
		}
		return nil, fmt.Errorf("-out %s: %w", path, err)
	}
	return &outFile{File: f, path: path, temp: true}, nil
}

// commit puts what was written in place: readable by all (CreateTemp's
// 0600 would keep a CI job's other steps, or an image's nonroot user,
// from it), closed, renamed over path.
func (o *outFile) commit() error {
	var err error
	if o.temp {
		err = o.Chmod(0o644)
	}
	err = errors.Join(err, o.Close())
	if err == nil && o.temp {
		err = os.Rename(o.Name(), o.path)
	}
	if err != nil {
		return fmt.Errorf("-out %s: %w", o.path, err)
	}
	return nil
}

// discard lets a file go that was not committed. After commit it finds
// the file closed and the temporary name renamed away, and does nothing.
func (o *outFile) discard() {
	_ = o.Close()
	if o.temp {
		_ = os.Remove(o.Name())
	}
}
