package peakmem

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestWatcherWritesThePeak: once the process holds 64 MiB more, the
// watcher's files show a resident set that includes them, the runtime's
// figures beside it, a heap profile (gzipped, as pprof writes it) and
// the goroutines' stacks (this test's among them); and once it stops, no
// temporary file is left behind.
func TestWatcherWritesThePeak(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "peak")
	w, err := New(dir)
	if err != nil {
		t.Fatal(err)
	}
	start, err := w.resident()
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(t.Context())
	defer stop()
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx, time.Millisecond, 1<<20) }()
	const more = 64 << 20
	held := make([]byte, more)
	for i := 0; i < len(held); i += 4096 {
		held[i] = 1 // resident, not just reserved
	}
	var got map[string]int64
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		var err error
		if _, got, err = Read(dir); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		if got["VmRSS:bytes"] >= start.total+more {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("peak.txt shows %d bytes resident; want at least %d (%d at the start and the %d held)", got["VmRSS:bytes"], start.total+more, start.total, more)
		}
	}
	runtime.KeepAlive(held)
	for _, name := range append([]string{"RssAnon:bytes", "RssFile:bytes"}, classes...) {
		if _, ok := got[name]; !ok {
			t.Errorf("peak.txt has no %s", name)
		}
	}
	if got["RssAnon:bytes"] < more || got["/memory/classes/total:bytes"] < more {
		t.Errorf("peak.txt: anonymous %d, the runtime's total %d; want both at least %d", got["RssAnon:bytes"], got["/memory/classes/total:bytes"], more)
	}
	if heap, err := os.ReadFile(filepath.Join(dir, "heap.pprof")); err != nil || !bytes.HasPrefix(heap, []byte{0x1f, 0x8b}) {
		t.Errorf("heap.pprof is not a gzipped profile: %v", err)
	}
	stacks, err := os.ReadFile(filepath.Join(dir, "goroutines.txt"))
	if err != nil || !strings.Contains(string(stacks), "peakmem.TestWatcherWritesThePeak") {
		t.Errorf("goroutines.txt does not show this test: %v", err)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if want := []string{"goroutines.txt", "heap.pprof", "peak.txt"}; !slices.Equal(names, want) {
		t.Errorf("files %v, want %v", names, want)
	}
}
