package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// readAsNonroot reads path as the distroless image's nonroot user (65532),
// as serve -snapshot would in the container. Only root can switch users;
// elsewhere the mode check beside the call stands alone.
func readAsNonroot(t *testing.T, path string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Logf("not root: the read as uid 65532 is not tried, only the file's mode")
		return
	}
	// t.TempDir's directories are 0700: open the way to the file, as an
	// image's directories are.
	for dir := filepath.Dir(path); dir != os.TempDir() && dir != "/"; dir = filepath.Dir(dir) {
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("head", "-c", "8", path)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65532, Gid: 65532}}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("reading the snapshot as uid 65532: %v: %s", err, out)
	}
}
