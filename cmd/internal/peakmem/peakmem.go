// Package peakmem records what a process holds at its resident peak. A
// rebuild's peak lasts moments (the new index full beside the one
// serving, the last batch's garbage not yet returned), and no scrape of
// /metrics lands on it; a watcher in the process can. It is a
// diagnostic, off unless asked for (serve -peak-profile), and the
// source of BENCHMARKS.md's breakdowns of a peak.
package peakmem

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"
)

// classes are the runtime's memory figures written beside the resident
// set: the live heap (as of the last collection), the heap's objects
// (live and garbage), its free pages not yet returned, the unused parts
// of its spans, and the runtime's own memory.
var classes = []string{
	"/gc/heap/live:bytes",
	"/memory/classes/heap/objects:bytes",
	"/memory/classes/heap/free:bytes",
	"/memory/classes/heap/unused:bytes",
	"/memory/classes/heap/released:bytes",
	"/memory/classes/heap/stacks:bytes",
	"/memory/classes/metadata/other:bytes",
	"/memory/classes/metadata/mspan/inuse:bytes",
	"/memory/classes/metadata/mcache/inuse:bytes",
	"/memory/classes/os-stacks:bytes",
	"/memory/classes/other:bytes",
	"/memory/classes/profiling/buckets:bytes",
	"/memory/classes/total:bytes",
}

// Watcher polls the process's resident set and writes what it holds
// each time the set reaches a new high.
type Watcher struct {
	dir     string
	status  *os.File // /proc/self/status, read again at offset 0
	buf     []byte
	samples []metrics.Sample
	best    int64 // the highest resident set written
}

// New is a watcher writing into dir, which it makes. It fails where the
// process has no /proc/self/status to read (not Linux).
func New(dir string) (*Watcher, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("peak profile: %w", err)
	}
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return nil, fmt.Errorf("peak profile: the resident set cannot be read here: %w", err)
	}
	w := &Watcher{dir: dir, status: f, buf: make([]byte, 8<<10), samples: make([]metrics.Sample, len(classes))}
	for i, name := range classes {
		w.samples[i].Name = name
	}
	if _, err := w.resident(); err != nil {
		f.Close()
		return nil, err
	}
	return w, nil
}

// Run polls every interval until ctx ends. Each time the resident set
// passes the highest written by at least step bytes, it replaces dir's
// peak.txt (the resident set, anonymous and file-backed, and the
// runtime's classes, a "name value" line each), heap.pprof (a heap
// profile, whose in-use figures are as of the last collection) and
// goroutines.txt (every goroutine's stack: what the process was doing).
// Each file is written aside and renamed, so none is ever half written;
// the three may come from two consecutive highs. Writing them costs a
// few milliseconds and perturbs what it measures a little: a diagnostic
// run's times are not the service's.
func (w *Watcher) Run(ctx context.Context, interval time.Duration, step int64) error {
	defer w.status.Close()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		rss, err := w.resident()
		if err != nil {
			return err
		}
		if rss.total < w.best+step {
			continue
		}
		if err := w.write(rss); err != nil {
			return err
		}
		w.best = rss.total
	}
}

// resident is the resident set, in bytes: in all, and of it the
// anonymous and the file-backed pages.
type resident struct{ total, anon, file int64 }

// resident reads VmRSS, RssAnon and RssFile.
func (w *Watcher) resident() (resident, error) {
	var r resident
	n, err := w.status.ReadAt(w.buf, 0)
	if n == 0 && err != nil {
		return r, fmt.Errorf("peak profile: %w", err)
	}
	found := 0
	for line := range bytes.Lines(w.buf[:n]) {
		name, rest, _ := bytes.Cut(line, []byte(":"))
		var into *int64
		switch string(name) {
		case "VmRSS":
			into = &r.total
		case "RssAnon":
			into = &r.anon
		case "RssFile":
			into = &r.file
		default:
			continue
		}
		kb, err := strconv.ParseInt(string(bytes.TrimSuffix(bytes.TrimSpace(rest), []byte(" kB"))), 10, 64)
		if err != nil {
			return r, fmt.Errorf("peak profile: %s: %w", name, err)
		}
		*into, found = kb<<10, found+1
	}
	if found != 3 {
		return r, fmt.Errorf("peak profile: /proc/self/status lacks VmRSS, RssAnon or RssFile")
	}
	return r, nil
}

func (w *Watcher) write(rss resident) error {
	metrics.Read(w.samples)
	var b bytes.Buffer
	fmt.Fprintf(&b, "time %s\n", time.Now().UTC().Format(time.RFC3339Nano))
	fmt.Fprintf(&b, "VmRSS:bytes %d\nRssAnon:bytes %d\nRssFile:bytes %d\n", rss.total, rss.anon, rss.file)
	for _, s := range w.samples {
		if s.Value.Kind() == metrics.KindUint64 {
			fmt.Fprintf(&b, "%s %d\n", s.Name, s.Value.Uint64())
		}
	}
	if err := w.replace("peak.txt", func(f io.Writer) error { _, err := f.Write(b.Bytes()); return err }); err != nil {
		return err
	}
	if err := w.replace("heap.pprof", pprof.WriteHeapProfile); err != nil {
		return err
	}
	return w.replace("goroutines.txt", func(f io.Writer) error { return pprof.Lookup("goroutine").WriteTo(f, 1) })
}

// Read is what the peak.txt in dir says: when it was written, and each
// figure by name ("VmRSS:bytes", the runtime's classes), in bytes.
func Read(dir string) (at time.Time, figures map[string]int64, err error) {
	b, err := os.ReadFile(filepath.Join(dir, "peak.txt"))
	if err != nil {
		return at, nil, err
	}
	figures = map[string]int64{}
	for line := range strings.Lines(string(b)) {
		name, value, ok := strings.Cut(strings.TrimSuffix(line, "\n"), " ")
		if !ok {
			return at, nil, fmt.Errorf("%s: line %q", dir, line)
		}
		if name == "time" {
			if at, err = time.Parse(time.RFC3339Nano, value); err != nil {
				return at, nil, fmt.Errorf("%s: %w", dir, err)
			}
			continue
		}
		if figures[name], err = strconv.ParseInt(value, 10, 64); err != nil {
			return at, nil, fmt.Errorf("%s: %s: %w", dir, name, err)
		}
	}
	return at, figures, nil
}

// replace writes name in the watcher's directory by fill, aside first,
// in a hidden file.
func (w *Watcher) replace(name string, fill func(io.Writer) error) error {
	f, err := os.CreateTemp(w.dir, "."+name+".*")
	if err != nil {
		return fmt.Errorf("peak profile: %w", err)
	}
	err = fill(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), filepath.Join(w.dir, name))
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("peak profile: %s: %w", name, err)
	}
	return nil
}
