// Command xjobprof is cmd/xjob with a CPU profile around it, for the load
// harness: `xjob local` has no pprof endpoint, and the harness must not add
// one to the core. When XJOBBENCH_CPUPROFILE names a file, the whole run is
// profiled into it; the profile is flushed when `xjob local` returns after
// SIGINT/SIGTERM (a SIGKILL loses it).
package main

import (
	"fmt"
	"os"
	"runtime/pprof"

	"github.com/xjobdev/xjob/internal/cli"
)

func main() {
	os.Exit(run())
}

func run() int {
	if path := os.Getenv("XJOBBENCH_CPUPROFILE"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			fmt.Fprintf(os.Stderr, "xjobprof: %v\n", err)
			return 1
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintf(os.Stderr, "xjobprof: %v\n", err)
			return 1
		}
		defer pprof.StopCPUProfile()
	}
	return cli.Main(os.Args[1:], os.Stdout, os.Stderr)
}
