//go:build !linux

package lambdarun

import "errors"

func limitCPU(name string, pid int, share float64) (func(), error) {
	return nil, errors.New("lambdarun: a CPU quota needs Linux's cgroup cpu controller")
}
