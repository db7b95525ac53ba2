//go:build !linux

package mariadb

import "os/exec"

// dieWithParent is a no-op where the kernel offers no parent-death
// signal: the cleanups stop the server.
func dieWithParent(*exec.Cmd) {}
