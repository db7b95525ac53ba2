package local

import (
	"context"
	"log/slog"
	"time"
)

// Maintenance periods, as xxl-job's background helpers run them.
const (
	sweepEvery   = 10 * time.Second // JobFailMonitorHelper
	refreshEvery = 30 * time.Second // JobRegistryHelper
	lostEvery    = 60 * time.Second // JobCompleteHelper
	purgeEvery   = 24 * time.Hour   // JobLogReportHelper's cleanup
	purgeFirst   = time.Minute      // first purge shortly after start, off the start-up path
)

// maintain runs the periodic upkeep until ctx ends: the callback sweep
// (failed logs whose completion was interrupted), group address refresh,
// the lost-job check and log retention. Each task failing is logged and
// retried at its next period.
func maintain(ctx context.Context, svc *services, log *slog.Logger) {
	type task struct {
		name  string
		every time.Duration
		next  time.Time
		run   func(context.Context) error
	}
	now := time.Now()
	tasks := []*task{
		{name: "callback sweep", every: sweepEvery, next: now.Add(sweepEvery), run: func(ctx context.Context) error {
			n, err := svc.callback.Sweep(ctx)
			if n > 0 {
				log.Info("callback sweep", "handled", n)
			}
			return err
		}},
		{name: "registry refresh", every: refreshEvery, next: now, run: func(ctx context.Context) error {
			r, err := svc.registry.RefreshGroups(ctx)
			if r.Removed > 0 || r.Updated > 0 {
				log.Info("registry refresh", "removed", r.Removed, "groupsUpdated", r.Updated)
			}
			return err
		}},
		{name: "lost-job check", every: lostEvery, next: now.Add(lostEvery), run: func(ctx context.Context) error {
			r, err := svc.upkeep.CheckLost(ctx)
			if r.Marked > 0 {
				log.Warn("lost-job check", "checked", r.Checked, "markedLost", r.Marked)
			}
			return err
		}},
		{name: "log purge", every: purgeEvery, next: now.Add(purgeFirst), run: func(ctx context.Context) error {
			n, err := svc.upkeep.PurgeLogs(ctx)
			if n > 0 {
				log.Info("log purge", "deleted", n)
			}
			return err
		}},
	}
	for {
		next := tasks[0]
		for _, t := range tasks[1:] {
			if t.next.Before(next.next) {
				next = t
			}
		}
		timer := time.NewTimer(time.Until(next.next))
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C:
		}
		if svc.chore(ctx, next.name, next.every) {
			if err := next.run(ctx); err != nil && ctx.Err() == nil {
				log.Error(next.name, "err", err)
			}
		}
		next.next = time.Now().Add(next.every)
	}
}
