//go:build unix

package execclient

import (
	"net"
	"syscall"
)

// peeker tells whether a pooled connection may carry a request: the
// executor has not closed it and sent nothing unasked. It peeks without
// blocking, one system call, so that a connection the executor closed
// while it sat in the pool (its idle timeout, a restart) is dropped
// before a request is written on it; net/http's read loop notices the
// same close while the connection is idle.
//
// It is built once per connection: the raw connection and the peek
// function were two allocations a call when made at each look.
type peeker struct {
	rc   syscall.RawConn // nil: the connection has none, assume it live
	err  error           // SyscallConn's failure: never live
	buf  [1]byte
	live bool
	peek func(fd uintptr) bool
}

func newPeeker(c net.Conn) *peeker {
	p := &peeker{}
	sc, ok := c.(syscall.Conn)
	if !ok {
		return p
	}
	p.rc, p.err = sc.SyscallConn()
	p.peek = func(fd uintptr) bool {
		_, _, rerr := syscall.Recvfrom(int(fd), p.buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		// Nothing to read yet is a live, quiet connection; 0 bytes is
		// the executor's FIN, and bytes it sent unasked make the
		// connection's next reply ambiguous.
		p.live = rerr == syscall.EAGAIN || rerr == syscall.EWOULDBLOCK
		return true
	}
	return p
}

// alive peeks at the connection (see peeker). It is called by one
// goroutine at a time: the one that took the connection from the pool.
func (p *peeker) alive() bool {
	switch {
	case p.err != nil:
		return false
	case p.rc == nil:
		return true
	}
	p.live = false
	err := p.rc.Read(p.peek)
	return err == nil && p.live
}
