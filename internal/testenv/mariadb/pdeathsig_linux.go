package mariadb

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes the kernel stop mariadbd when the test binary dies
// without running its cleanups (a panic, a timeout, kill -9), so no server
// outlives its tests.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
