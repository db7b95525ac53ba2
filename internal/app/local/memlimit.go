package local

import (
	"fmt"
	"runtime/debug"
	"strconv"
	"strings"
)

// DefaultMemoryLimit is `xjob local`'s soft limit of the Go runtime's
// memory (debug.SetMemoryLimit): none. A limit that binds does the
// opposite of what it is for: at 64MiB steady 10,000 jobs a second
// (35–45 MB live, the Go runtime at about 75 MB) had the collector run
// two to three times as often, fell behind and never caught up, at 1.8×
// the CPU a trigger; 96MiB did not bind in a run that kept up and
// changed nothing (×1.00). The run a limit would bound, one far behind,
// is the one it slows further, so xjob sets none unless asked
// (--memory-limit, XJOB_MEMORY_LIMIT): an operator sizing a container
// sets it well above the heap in use. docs/performance.md has the runs.
const DefaultMemoryLimit int64 = 0

// memoryUnits are GOMEMLIMIT's suffixes, largest first so that "MiB" is
// not read as "B".
var memoryUnits = []struct {
	suffix string
	shift  uint
}{{"TiB", 40}, {"GiB", 30}, {"MiB", 20}, {"KiB", 10}, {"B", 0}}

// minMemoryLimit is the smallest limit accepted: below it the runtime's
// start-up memory alone (about 25 MB) would keep the collector running.
const minMemoryLimit int64 = 32 << 20

// maxMemoryLimit bounds a limit to what int64 holds with room to spare
// (1 PiB); nothing larger is a setting, only a typo.
const maxMemoryLimit int64 = 1 << 50

// parseMemoryLimit reads a memory limit as GOMEMLIMIT writes it: a whole
// number of bytes with an optional B, KiB, MiB, GiB or TiB suffix, or
// "off" (0, as is "0"): no limit set by xjob.
func parseMemoryLimit(s string) (int64, error) {
	t := strings.TrimSpace(s)
	if t == "off" || t == "0" {
		return 0, nil
	}
	shift := uint(0)
	for _, u := range memoryUnits {
		if n, ok := strings.CutSuffix(t, u.suffix); ok {
			t, shift = strings.TrimSpace(n), u.shift
			break
		}
	}
	if t == "" || t[0] == '+' || t[0] == '-' {
		return 0, fmt.Errorf("%q is not a size (e.g. 128MiB, 1GiB, or off)", s)
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a size (e.g. 128MiB, 1GiB, or off)", s)
	}
	if n > maxMemoryLimit>>shift {
		return 0, fmt.Errorf("%q is above 1024TiB", s)
	}
	return n << shift, nil
}

// formatMemoryLimit writes a limit back in the largest whole unit, for
// --help and the start-up log.
func formatMemoryLimit(n int64) string {
	if n <= 0 {
		return "off"
	}
	for _, u := range memoryUnits {
		if u.shift > 0 && n%(1<<u.shift) == 0 {
			return strconv.FormatInt(n>>u.shift, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10) + "B"
}

// applyMemoryLimit sets the process's soft memory limit when the
// configuration has one and returns the limit in effect afterwards
// (math.MaxInt64: none). It is called by Main and ServerMain only, never
// by Run: a limit is the process's, and an embedding program or a test
// keeps its own.
func applyMemoryLimit(limit int64) int64 {
	if limit > 0 {
		debug.SetMemoryLimit(limit)
	}
	return debug.SetMemoryLimit(-1)
}
