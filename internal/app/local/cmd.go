package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Main is `xjob local`: it reads flags (args, after "local") and the
// process environment, runs until SIGINT or SIGTERM and returns the exit
// code: 0 after a clean shutdown, 1 when it failed, 2 for bad usage or
// configuration.
func Main(args []string, stdout, stderr io.Writer) int {
	cfg, err := Parse(args, os.LookupEnv, stderr)
	if errors.Is(err, ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "xjob local: %v\n", err)
		return 2
	}
	cfg.Stdout = stdout
	applyMemoryLimit(cfg.MemoryLimit)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := Run(ctx, cfg); err != nil {
		fmt.Fprintf(stderr, "xjob local: %v\n", err)
		return 1
	}
	return 0
}
