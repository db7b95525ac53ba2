//go:build unix

package executor

import (
	"os"
	"syscall"
)

// fileOwner returns the uid owning the file fi describes.
func fileOwner(fi os.FileInfo) (int, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}
