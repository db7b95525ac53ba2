package sqlitestore

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/pkg/driver"
)

// claimLog is a scheduled occurrence's claim of job at fire time at,
// made at now.
func claimLog(job, at, now int64) xjob.Log {
	return xjob.Log{OccurrenceID: fmt.Sprintf("j%d/t%d/s0", job, at), JobID: job, GroupID: 1,
		TriggerType: xjob.TriggerCron, ScheduledTime: at, TriggerTime: now, ExecutorHandler: "h",
		TriggerMsg: fmt.Sprintf("msg %d", job), ClaimUntil: now + 30_000}
}

// The multi-row inserts decide every claim as one log's insert after the
// other does, and store the same rows: a batch is claimed through
// LogCreateMany on one file and log by log on another, and the outcomes,
// the logs returned and the table must match. The batches put repeats of
// one occurrence, existing logs (triggered, held, expired) and new ones in
// one chunk, so that the read-back path runs with every kind of clash.
func TestLogCreateManyMatchesPerLogPath(t *testing.T) {
	t.Parallel()
	const at, later = 1_800_000_000_000, 1_800_000_040_000
	// Before each batch: job 1 triggered, job 2 held (claimed at later),
	// job 3's claim expired, all at fire time at.
	prior := []xjob.Log{claimLog(1, at, at), claimLog(2, at, later), claimLog(3, at, at)}
	many := func(n int, first int64) []xjob.Log {
		var ls []xjob.Log
		for j := range int64(n) {
			ls = append(ls, claimLog(first+j, at, later))
		}
		return ls
	}
	cases := []struct {
		name  string
		batch []xjob.Log
	}{
		{"all new, one chunk", many(64, 10)},
		{"all new, every chunk size", many(127, 10)},
		{"all existing", []xjob.Log{claimLog(1, at, later), claimLog(2, at, later), claimLog(3, at, later), claimLog(1, at, later)}},
		{"repeats in one chunk", []xjob.Log{claimLog(10, at, later), claimLog(11, at, later), claimLog(10, at, later),
			claimLog(10, at, later+1), claimLog(12, at, later), claimLog(11, at, later+40_000), claimLog(13, at, later), claimLog(13, at, later)}},
		{"existing, new and repeats mixed", append(append([]xjob.Log{claimLog(3, at, later), claimLog(10, at, later), claimLog(1, at, later),
			claimLog(3, at, later), claimLog(2, at, later), claimLog(10, at, later+31_000), {JobID: 99}, claimLog(11, at, later)},
			many(40, 20)...), claimLog(3, at, later+31_000), claimLog(20, at, later))},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			batched, single := setup(t, Options{}), setup(t, Options{})
			for _, db := range []*DB{batched, single} {
				for i, l := range prior {
					created, err := db.LogCreate(ctx, l)
					if err != nil {
						t.Fatal(err)
					}
					if i == 0 {
						err = db.LogTriggered(ctx, driver.LogTriggeredParams{ID: created.ID, ExecutorAddress: "http://a:1",
							TriggerCode: xjob.CodeSuccess, TriggerMsg: "ok"})
						if err != nil {
							t.Fatal(err)
						}
					}
				}
			}
			got, err := batched.LogCreateMany(ctx, c.batch)
			if err != nil {
				t.Fatal(err)
			}
			for i, l := range c.batch {
				want, err := single.LogCreateMany(ctx, []xjob.Log{l})
				if err != nil {
					t.Fatal(err)
				}
				if g, w := fmt.Sprintf("%+v", got[i]), fmt.Sprintf("%+v", want[0]); g != w {
					t.Errorf("item %d (%s):\n got %s\nwant %s", i, l.OccurrenceID, g, w)
				}
			}
			rows := func(db *DB) []xjob.Log {
				r, err := db.r.QueryContext(ctx, `SELECT `+logColumns+` FROM logs ORDER BY id`)
				if err != nil {
					t.Fatal(err)
				}
				ls, err := scanAll(r, scanLog)
				if err != nil {
					t.Fatal(err)
				}
				return ls
			}
			if g, w := fmt.Sprintf("%+v", rows(batched)), fmt.Sprintf("%+v", rows(single)); g != w {
				t.Errorf("stored logs differ:\n got %s\nwant %s", g, w)
			}
		})
	}
}

// The multi-row reply records leave the same logs and answer the same
// errors as a statement a reply: on two files with the same logs, a
// batch through LogTriggeredMany and its replies one at a time.
func TestLogTriggeredManyMatchesPerReply(t *testing.T) {
	t.Parallel()
	const at = 1_800_000_000_000
	reply := func(id int64, code int) driver.LogTriggeredParams {
		return driver.LogTriggeredParams{ID: id, ExecutorAddress: fmt.Sprintf("http://e%d:1", id), TriggerCode: code,
			TriggerMsg: fmt.Sprintf("reply %d <br> ü", id)}
	}
	many := func(first, n int64) []driver.LogTriggeredParams {
		var ps []driver.LogTriggeredParams
		for id := first; id < first+n; id++ {
			ps = append(ps, reply(id, xjob.CodeSuccess))
		}
		return ps
	}
	cases := []struct {
		name string
		ps   []driver.LogTriggeredParams
	}{
		{"all fresh, every chunk size", many(3, 127)},
		{"one already triggered", append(many(3, 10), reply(1, xjob.CodeSuccess))},
		{"one missing", append(many(3, 31), reply(999, xjob.CodeSuccess))},
		{"a log twice", append(many(3, 8), reply(5, 500))},
		{"failures", []driver.LogTriggeredParams{reply(3, 500), reply(4, 500), reply(2, 200), reply(5, 200)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			batched, single := setup(t, Options{}), setup(t, Options{})
			for _, db := range []*DB{batched, single} {
				var logs []xjob.Log
				for j := int64(1); j <= 200; j++ {
					logs = append(logs, claimLog(j, at, at))
				}
				if _, err := db.LogCreateMany(ctx, logs); err != nil {
					t.Fatal(err)
				}
				if err := db.LogTriggered(ctx, reply(1, xjob.CodeSuccess)); err != nil {
					t.Fatal(err)
				}
			}
			got, err := batched.LogTriggeredMany(ctx, c.ps)
			if err != nil {
				t.Fatal(err)
			}
			for i, p := range c.ps {
				want, err := single.LogTriggeredMany(ctx, []driver.LogTriggeredParams{p})
				if err != nil {
					t.Fatal(err)
				}
				if fmt.Sprint(got[i]) != fmt.Sprint(want[0]) {
					t.Errorf("reply %d (log %d): got %v, want %v", i, p.ID, got[i], want[0])
				}
			}
			rows := func(db *DB) string {
				r, err := db.r.QueryContext(ctx, `SELECT `+logColumns+` FROM logs ORDER BY id`)
				if err != nil {
					t.Fatal(err)
				}
				ls, err := scanAll(r, scanLog)
				if err != nil {
					t.Fatal(err)
				}
				return fmt.Sprintf("%+v", ls)
			}
			if g, w := rows(batched), rows(single); g != w {
				t.Errorf("stored logs differ:\n got %s\nwant %s", g, w)
			}
		})
	}
}

// The multi-row reply record finds each log by its primary key.
func TestLogTriggeredRowsPlanUsesTheKey(t *testing.T) {
	t.Parallel()
	db := setup(t, Options{})
	joined := strings.Join(queryPlan(t, db, sqlLogTriggeredRows(2), 1, "a", 200, "m", 2, "b", 200, "m"), "; ")
	if strings.Contains(joined, "SCAN logs") || !strings.Contains(joined, "logs USING INTEGER PRIMARY KEY") {
		t.Errorf("plan: %s", joined)
	}
}
