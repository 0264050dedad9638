package serveproc

import (
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolsearch/toolsearch/cmd/internal/bintest"
)

// TestMemory reads this process's own figures: the peak is at least what
// is resident, and a field /proc does not have is an error.
func TestMemory(t *testing.T) {
	rss, err := memory(os.Getpid(), "VmRSS")
	if err != nil || rss <= 0 {
		t.Fatalf("VmRSS = %d, %v", rss, err)
	}
	hwm, err := memory(os.Getpid(), "VmHWM")
	if err != nil || hwm < rss {
		t.Errorf("VmHWM = %d, %v; want at least VmRSS %d", hwm, err, rss)
	}
	if _, err := memory(os.Getpid(), "VmNothing"); err == nil {
		t.Error("an unknown field: no error")
	}
}

// TestCPU reads utime and stime after the command's name, whatever it
// holds, and this process's own once it has used some processor time.
func TestCPU(t *testing.T) {
	tests := []struct {
		stat string
		want time.Duration
		err  bool
	}{
		{stat: "42 (toolsearch) S 1 42 42 0 -1 4194560 100 0 0 0 250 31 0 0 20 0 8 0 100 0 0", want: 2810 * time.Millisecond},
		{stat: "42 (a ) b (c) 1 2) R 1 42 42 0 -1 0 0 0 0 0 7 3 0 0", want: 100 * time.Millisecond},
		{stat: "42 (toolsearch) S 1 42 42 0 -1 0 0 0 0 0 x 3", err: true},
		{stat: "42 (toolsearch) S 1 42", err: true},
		{stat: "no name", err: true},
	}
	for _, tt := range tests {
		got, err := statCPU([]byte(tt.stat))
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("statCPU(%q) = %v, %v; want %v, error %v", tt.stat, got, err, tt.want, tt.err)
		}
	}
	// This process spins until /proc has counted a tick of its time: on
	// a machine busy with other tests a fixed spin may not be scheduled
	// long enough to be counted.
	for deadline := time.Now().Add(10 * time.Second); ; {
		got, err := cpu(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		if got > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no processor time counted after 10 s of spinning")
		}
		for start := time.Now(); time.Since(start) < 10*time.Millisecond; {
		}
	}
}

// TestStartPortTaken: a port found free and taken by another process
// before the server binds it costs Start a second try, not the run.
func TestStartPortTaken(t *testing.T) {
	bin := bintest.Build(t, "../../toolsearch")
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	tries := 0
	freeAddr = func() (string, error) {
		if tries++; tries == 1 {
			return taken.Addr().String(), nil
		}
		return FreeAddr()
	}
	defer func() { freeAddr = FreeAddr }()
	// Its learning file in the test's directory, not the package's.
	env := []string{"TOOLSEARCH_LEARNING_PATH=" + filepath.Join(t.TempDir(), "learned.db")}
	s, err := Start(t.Context(), bin, env, time.Minute, "-metrics-addr", "off")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	if tries != 2 || s.Addr == taken.Addr().String() {
		t.Errorf("served on %s after %d tries; want a second try on another port than %s", s.Addr, tries, taken.Addr())
	}
	resp, err := http.Get(s.Base + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("readyz: %s", resp.Status)
	}
}
