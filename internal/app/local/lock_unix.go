//go:build unix

package local

import (
	"errors"
	"os"
	"syscall"
)

// lockFile takes an exclusive advisory lock on path (flock). locked is false
// when another process holds it. The kernel drops the lock when the process
// dies, so a SIGKILLed process never leaves a stale lock behind.
func lockFile(path string) (unlock func(), locked bool, err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, false, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return func() {}, false, nil
		}
		return nil, false, err
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		_ = f.Close()
	}, true, nil
}
