//go:build !linux

package serveproc

import "os/exec"

// DieWithParent does nothing here: only Linux kills a child when its
// parent dies (Pdeathsig).
func DieWithParent(*exec.Cmd) {}
