package serveproc

import (
	"os/exec"
	"syscall"
)

// DieWithParent has cmd's process killed when the harness that started
// it dies, however it dies: a harness piped into head died of SIGPIPE and
// left its toolsearch serving, its port and temporary files held.
func DieWithParent(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
