//go:build !linux

package lambdarun

import "time"

// CPUMeasured says whether ProcessCPU can read another process's CPU
// time on this system: not here (Linux only), so every invocation's CPU
// reads 0 and the cost meter's CPU share adds nothing.
const CPUMeasured = false

// ProcessCPU is not implemented off Linux: ok is always false.
func ProcessCPU(pid int) (cpu time.Duration, ok bool) { return 0, false }
