//go:build unix

package execclient

import (
	"net"
	"syscall"
)

// alive reports whether a pooled connection may carry a request: the
// executor has not closed it and sent nothing unasked. It peeks without
// blocking, one system call, so that a connection the executor closed
// while it sat in the pool (its idle timeout, a restart) is dropped
// before a request is written on it; net/http's read loop notices the
// same close while the connection is idle.
func alive(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	live := false
	var buf [1]byte
	err = rc.Read(func(fd uintptr) bool {
		_, _, rerr := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		// Nothing to read yet is a live, quiet connection; 0 bytes is
		// the executor's FIN, and bytes it sent unasked make the
		// connection's next reply ambiguous.
		live = rerr == syscall.EAGAIN || rerr == syscall.EWOULDBLOCK
		return true
	})
	return err == nil && live
}
