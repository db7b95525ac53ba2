package pgserver

import "syscall"

// procAttr runs a server process as the server user under root, and has
// the kernel stop it (SIGQUIT: immediate shutdown) if the test binary dies
// without running its cleanup.
func (s *Server) procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: s.cred, Pdeathsig: syscall.SIGQUIT}
}
