// Package demo holds the job handlers of the HTTP example executor. They
// live in a package of their own, rather than in the example's main, so
// that `xjob local --demo` (what `make run` starts) serves exactly these
// handlers from its in-process demo executor: the demo and the example
// cannot drift apart.
package demo

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/xjobdev/xjob/internal/fallback"
	"github.com/xjobdev/xjob/pkg/executor"
)

// The JobHandler names, as typed in the admin's job form. They match the
// handler names of xxl-job's sample executor, so jobs created for that
// sample run here unchanged.
const (
	DemoHandler      = "demoJobHandler"
	ShardingHandler  = "shardingJobHandler"
	LifecycleHandler = "lifecycleJobHandler"
)

// Steps and StepInterval shape a Demo run: Steps log lines, StepInterval
// apart. Half a second in all, so even a 2 s cron (the `make run` demo)
// never piles up behind SERIAL_EXECUTION, yet a run is long enough to be
// seen running, killed or covered.
const (
	Steps        = 5
	StepInterval = 100 * time.Millisecond
)

// Register adds every example handler to e. logger receives the lifecycle
// handler's init and destroy notes (nil: slog.Default()).
func Register(e *executor.Executor, logger *slog.Logger) error {
	logger = fallback.Logger(logger)
	if err := e.Register(DemoHandler, Demo); err != nil {
		return fmt.Errorf("demo handlers: %w", err)
	}
	if err := e.Register(ShardingHandler, Sharding); err != nil {
		return fmt.Errorf("demo handlers: %w", err)
	}
	err := e.Register(LifecycleHandler, Lifecycle,
		// init runs before the first trigger a job worker executes, destroy
		// when that worker ends (idle for 90 s, killed, or at shutdown).
		executor.WithInit(func(context.Context) error { logger.Info("lifecycle init"); return nil }),
		executor.WithDestroy(func(context.Context) error { logger.Info("lifecycle destroy"); return nil }),
	)
	if err != nil {
		return fmt.Errorf("demo handlers: %w", err)
	}
	return nil
}

// Demo logs its parameter and works for Steps × StepInterval, stopping
// early when the trigger times out or is killed. Returning nil reports
// success (200); the parameter "fail" makes it fail (500).
func Demo(ctx context.Context, job *executor.Job) error {
	job.Logf("demoJobHandler started: job %d, log %d, param %q", job.JobID, job.LogID, job.Param)
	t := time.NewTicker(StepInterval)
	defer t.Stop()
	for i := 1; i <= Steps; i++ {
		select {
		case <-ctx.Done():
			// Timeout or kill: the executor has already reported the
			// result (502 or 500); just stop working.
			return ctx.Err()
		case <-t.C:
			job.Logf("step %d of %d", i, Steps)
		}
	}
	if job.Param == "fail" {
		return errors.New("asked to fail") // reported as 500 with this message
	}
	job.Succeed("demo done") // 200 with a message the admin's log page shows
	return nil
}

// Sharding shows SHARDING_BROADCAST: every executor of the group gets the
// trigger with its own shard index and processes its share of the items.
func Sharding(_ context.Context, job *executor.Job) error {
	total := max(job.ShardTotal, 1) // 1 when the job is not broadcast
	job.Logf("shard %d of %d", job.ShardIndex, total)
	for item := 0; item < 10; item++ {
		if item%total == job.ShardIndex {
			job.Logf("processing item %d", item)
		}
	}
	job.Succeed(fmt.Sprintf("shard %d/%d done", job.ShardIndex, total))
	return nil
}

// Lifecycle has init/destroy hooks (see Register) and logs through slog
// into the per-run log.
func Lifecycle(_ context.Context, job *executor.Job) error {
	job.Logger().Info("lifecycle run", "param", job.Param)
	return nil
}
