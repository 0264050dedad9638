package serveproc

import (
	"os"
	"syscall"
	"testing"
	"time"
)

// TestInterruptible: an interrupt ends the harness's context instead of
// the process.
func TestInterruptible(t *testing.T) {
	ctx, stop := Interruptible()
	defer stop()
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the interrupt did not end the context")
	}
}
