package serveproc

import (
	"bufio"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestDieWithParent: a harness that dies (here a copy of the test binary
// killed with SIGKILL, as a pipe closed under it kills one with SIGPIPE)
// takes the process it started with it.
func TestDieWithParent(t *testing.T) {
	if os.Getenv("SERVEPROC_PARENT") == "1" {
		child := exec.Command("sleep", "60")
		DieWithParent(child)
		if err := child.Start(); err != nil {
			os.Exit(2)
		}
		os.Stdout.WriteString(strconv.Itoa(child.Process.Pid) + "\n")
		time.Sleep(time.Minute) // killed before
		return
	}
	parent := exec.Command(os.Args[0], "-test.run=^TestDieWithParent$")
	parent.Env = append(os.Environ(), "SERVEPROC_PARENT=1")
	out, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("the parent wrote %q", line)
	}
	parent.Process.Kill()
	parent.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for syscall.Kill(pid, 0) == nil && !zombie(pid) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("process %d outlived the parent that started it", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// zombie reports whether pid has exited and waits for its reaper (or is
// gone).
func zombie(pid int) bool {
	state, err := status(pid, "State")
	return err != nil || strings.HasPrefix(state, "Z")
}
