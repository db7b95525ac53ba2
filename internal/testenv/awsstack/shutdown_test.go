package awsstack_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/testenv/awsstack"
	"github.com/xjobdev/xjob/internal/testenv/emulator"
	"github.com/xjobdev/xjob/internal/testenv/syncbuf"
	"github.com/xjobdev/xjob/internal/testenv/tool"
	"github.com/xjobdev/xjob/pkg/driver"
)

// TestShutdownFlushesReports: an execution environment keeps its
// run-report counts (a write per environment and minute, not per
// invocation) and writes them when Lambda shuts it down. A run triggered
// by hand (dispatch) and its result (written by the callback function, or
// by the results queue's applier in dispatch) are in
// the trigger log at once, but not yet in the day's report; once the
// deployment shuts its environments down — SIGTERM to the real bootstraps
// behind the Runtime API, which registered the runtime's extension for
// it; the same flush for the in-process environments, whose writes the
// meter counts — the report holds the run.
func TestShutdownFlushesReports(t *testing.T) {
	tool.SkipIfShort(t, "the AWS emulators (dynalite, fauxqs)")
	if _, err := emulator.Dir(""); err != nil {
		if errors.Is(err, emulator.ErrNotInstalled) {
			tool.Missing(t, err)
		}
		t.Fatal(err)
	}
	for _, bootstraps := range []bool{false, true} {
		name := "in-process"
		if bootstraps {
			name = "bootstraps"
		}
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			opts := awsstack.Options{Shards: 2, RingPollers: 1, PollWait: time.Second,
				NoMaintenance: true, Logger: slog.New(slog.DiscardHandler)}
			logs := &syncbuf.Buffer{}
			if bootstraps {
				opts.Bootstraps, opts.BootstrapOutput = t.TempDir(), logs
				if err := awsstack.BuildBootstraps(ctx, "", opts.Bootstraps); err != nil {
					t.Fatal(err)
				}
			}
			d, err := awsstack.Start(ctx, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				d.Close()
				if t.Failed() && bootstraps {
					t.Logf("bootstrap logs:\n%s", tail(logs.String(), 40))
				}
			}()

			j, stop := manualJob(ctx, t, d, "shutdown")
			defer stop()

			runByHand(ctx, t, d, j.ID)
			report := func() xjob.ReportDay {
				t.Helper()
				today := time.Now().UTC()
				days, err := d.Store().ReportList(ctx, driver.ReportListParams{
					From: today.AddDate(0, 0, -1).Format(time.DateOnly), To: today.AddDate(0, 0, 1).Format(time.DateOnly)})
				if err != nil {
					t.Fatal(err)
				}
				var sum xjob.ReportDay
				for _, r := range days {
					sum.Add(r)
				}
				return sum
			}
			if got := report(); got != (xjob.ReportDay{}) {
				t.Errorf("report before the shutdown %+v: the environments wrote their counts at once", got)
			}
			before := d.Meter().Snapshot()
			d.Shutdown()
			if got := report(); got.SucCount != 1 || got.RunningCount != 0 || got.FailCount != 0 {
				t.Errorf("report after the shutdown %+v, want the run's success", got)
			}
			if !bootstraps {
				// The shutdown flush is metered: the report counters of the
				// environments that counted the run (the manual trigger's
				// dispatch, the result's callback or applier), an
				// UpdateItem each, and nothing else of the functions (the
				// mappings' last polls end meanwhile).
				writes := d.Meter().Snapshot().Sub(before)
				n := 0
				for fn, ops := range writes.Ops {
					if strings.HasPrefix(fn, "esm:") {
						continue
					}
					for op, s := range ops {
						if (fn != "dispatch" && fn != "callback") || op != "dynamodb:UpdateItem" {
							t.Errorf("%s %s ×%d metered at shutdown, want only the report writes of dispatch and callback", fn, op, s.Requests)
						}
						n += s.Requests
					}
				}
				if n < 1 || n > 2 {
					t.Errorf("%d report writes metered at shutdown, want 1 or 2 (one per environment that counted)", n)
				}
			}
		})
	}
}
