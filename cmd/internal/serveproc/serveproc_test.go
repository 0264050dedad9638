package serveproc

import (
	"os"
	"testing"
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
