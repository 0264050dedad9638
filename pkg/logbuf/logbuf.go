// Package logbuf is a log sink that goroutines may write while another
// reads it: a server's or a child process's output, as a test or a
// harness watches it.
package logbuf

import (
	"sync"
)

// Buffer holds what is written to it, behind a lock. The zero value is
// ready and keeps everything; with Tail set, it keeps only the end.
type Buffer struct {
	// Tail, when positive, bounds what is kept to the last Tail bytes
	// (up to twice that between trims): a harness may run a process for
	// minutes against hostile input and wants only the end of what it
	// wrote.
	Tail int

	mu  sync.Mutex
	b   []byte
	cut bool // the start was dropped
}

func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b = append(s.b, p...)
	if s.Tail > 0 && len(s.b) > 2*s.Tail {
		s.b = append(s.b[:0], s.b[len(s.b)-s.Tail:]...)
		s.cut = true
	}
	return len(p), nil
}

// String is what was written so far: with Tail, its last Tail bytes,
// after "…" when earlier ones were dropped.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Tail > 0 && (len(s.b) > s.Tail || s.cut) {
		return "…" + string(s.b[max(0, len(s.b)-s.Tail):])
	}
	return string(s.b)
}
