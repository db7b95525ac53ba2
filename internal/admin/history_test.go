package admin_test

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/adapter/execclient"
	"github.com/xjobdev/xjob/internal/admin"
	"github.com/xjobdev/xjob/internal/scheduler/tally"
	"github.com/xjobdev/xjob/pkg/driver"
)

// Report days of two databases imported side by side both count; xjob's
// own runs of a day do not hide the imported counts of that day; a
// re-import adds only what grew since; and no group's report counts them.
func TestImportHistoryDaysPerOrigin(t *testing.T) {
	t.Parallel()
	e := setup(t)
	const today, yesterday = "2024-03-02", "2024-03-01"
	if err := e.db.ReportAdd(e.ctx, xjob.ReportDay{Day: today, GroupID: e.group.ID, SucCount: 1}); err != nil {
		t.Fatal(err)
	}
	total := func(groups ...int64) int {
		t.Helper()
		days, err := e.db.ReportList(e.ctx, driver.ReportListParams{From: today, To: today, GroupIDs: groups})
		if err != nil || len(days) > 1 {
			t.Fatalf("report: %+v %v", days, err)
		}
		if len(days) == 0 {
			return 0
		}
		return days[0].RunningCount + days[0].SucCount + days[0].FailCount
	}
	for _, step := range []struct {
		name        string
		origin      string
		days        []xjob.ReportDay
		added, kept int
		total       int
	}{
		{"first database", "db-one", []xjob.ReportDay{{Day: yesterday, SucCount: 3}, {Day: today, RunningCount: 2, SucCount: 5}},
			2, 0, 1 + 7},
		{"second database beside it", "db-two", []xjob.ReportDay{{Day: today, FailCount: 2}}, 1, 0, 1 + 7 + 2},
		{"first again, today's runs ended", "db-one",
			[]xjob.ReportDay{{Day: yesterday, SucCount: 3}, {Day: today, SucCount: 6, FailCount: 1}}, 1, 1, 1 + 7 + 2},
		{"first again, nothing new", "db-one",
			[]xjob.ReportDay{{Day: yesterday, SucCount: 3}, {Day: today, SucCount: 6, FailCount: 1}}, 0, 2, 1 + 7 + 2},
	} {
		res, err := e.svc.ImportHistory(e.ctx, admin.HistoryParams{Origin: step.origin, Days: step.days})
		if err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if res.DaysAdded != step.added || res.DaysKept != step.kept || total() != step.total {
			t.Fatalf("%s: %+v, installation's today %d; want %d added, %d kept, %d", step.name, res, total(),
				step.added, step.kept, step.total)
		}
	}
	if n := total(e.group.ID); n != 1 {
		t.Fatalf("the group's report counts %d runs today, want its own 1", n)
	}
}

// The services of two nodes (or two Lambda environments) batch their
// report counters, each in its own memory. An import's days are written at
// once all the same: the same import run again through the other node
// finds them and adds nothing, instead of counting the days twice.
func TestImportHistoryDaysPastTheBatch(t *testing.T) {
	t.Parallel()
	e := setup(t)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	node := func() *admin.Service {
		t.Helper()
		b, err := tally.New(e.db, tally.Options{Interval: time.Hour, Clock: e.clk, Logger: quiet}) // no flush within the test
		if err != nil {
			t.Fatal(err)
		}
		ec, err := execclient.New(execclient.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(ec.Close)
		svc, err := admin.New(admin.Config{Store: b.Store(e.db), Queues: e.db, Executors: ec, Finisher: e.cb, Clock: e.clk, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		return svc
	}
	a, b := node(), node()
	days := []xjob.ReportDay{{Day: "2024-03-01", SucCount: 3, FailCount: 1}}
	first, err := a.ImportHistory(e.ctx, admin.HistoryParams{Origin: "db-one", Days: days})
	if err != nil || first.DaysAdded != 1 {
		t.Fatalf("first import: %+v %v", first, err)
	}
	again, err := b.ImportHistory(e.ctx, admin.HistoryParams{Origin: "db-one", Days: days})
	if err != nil || again.DaysAdded != 0 || again.DaysKept != 1 {
		t.Fatalf("the same import on the other node: %+v %v, want the day kept", again, err)
	}
	got, err := e.db.ReportList(e.ctx, driver.ReportListParams{From: "2024-03-01", To: "2024-03-01"})
	if err != nil || len(got) != 1 || got[0].SucCount != 3 || got[0].FailCount != 1 {
		t.Fatalf("the store's day %+v %v, want 3 succeeded and 1 failed, once", got, err)
	}
}
