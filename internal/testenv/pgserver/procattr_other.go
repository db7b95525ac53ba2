//go:build unix && !linux

package pgserver

import "syscall"

// procAttr runs a server process as the server user under root.
func (s *Server) procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: s.cred}
}
