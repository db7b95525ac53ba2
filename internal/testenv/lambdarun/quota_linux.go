//go:build linux

package lambdarun

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// cpuCgroupRoot is where the cgroup v1 cpu controller is mounted.
const cpuCgroupRoot = "/sys/fs/cgroup/cpu"

// quotaPeriodUs is the CFS period of a quota: Lambda's CPU share is
// enforced the same way, a quota of CPU time every period.
const quotaPeriodUs = 100_000

// limitCPU puts process pid in a cgroup of its own that may use share of
// one core (CFS bandwidth control), and returns how to remove the cgroup
// once the process has exited. The process ran unlimited from its start
// until here (a fraction of a millisecond of its Init).
func limitCPU(name string, pid int, share float64) (remove func(), err error) {
	if _, err := os.Stat(filepath.Join(cpuCgroupRoot, "cpu.cfs_quota_us")); err != nil {
		return nil, fmt.Errorf("lambdarun: a CPU quota needs the cgroup v1 cpu controller at %s: %w", cpuCgroupRoot, err)
	}
	dir := filepath.Join(cpuCgroupRoot, "lambdarun-"+name+"-"+strconv.Itoa(pid))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("lambdarun: cgroup for %s: %w", name, err)
	}
	remove = func() { _ = os.Remove(dir) }
	quota := max(int(share*quotaPeriodUs), 1000) // the kernel's least quota is 1 ms
	for _, w := range []struct{ file, value string }{
		{"cpu.cfs_period_us", strconv.Itoa(quotaPeriodUs)},
		{"cpu.cfs_quota_us", strconv.Itoa(quota)},
		{"cgroup.procs", strconv.Itoa(pid)},
	} {
		if err := os.WriteFile(filepath.Join(dir, w.file), []byte(w.value), 0o644); err != nil {
			remove()
			return nil, fmt.Errorf("lambdarun: cgroup for %s: write %s: %w", name, w.file, err)
		}
	}
	return remove, nil
}
