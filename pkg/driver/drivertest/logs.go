package drivertest

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/pkg/driver"
)

const t0 = 1_700_000_000_000 // a fixed instant the log fixtures count from

// sampleLog is a CRON log of occurrence, triggered at triggerTime. Its
// ScheduledTime is the same for every log of one occurrence, as a
// scheduled occurrence's fire time is (its id names it; see
// driver.LogStore.LogCreate).
func sampleLog(occurrence string, job, group, triggerTime int64) xjob.Log {
	return xjob.Log{
		OccurrenceID:           occurrence,
		JobID:                  job,
		GroupID:                group,
		TriggerType:            xjob.TriggerCron,
		ScheduledTime:          t0 - 10,
		TriggerTime:            triggerTime,
		ExecutorHandler:        "demoHandler",
		ExecutorParam:          "p=1",
		ExecutorShardingParam:  "0/1",
		ExecutorFailRetryCount: 1,
		ClaimUntil:             triggerTime + 30_000,
	}
}

func logID(l xjob.Log) int64 { return l.ID }

func requireLog(t *testing.T, what string, got, want xjob.Log) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s:\n got  %+v\n want %+v", what, got, want)
	}
}

// ExerciseLogStore runs the LogStore contract against stores from newStore.
func ExerciseLogStore(t *testing.T, newStore func(t *testing.T) driver.LogStore) {
	t.Helper()

	t.Run("CreateGet", func(t *testing.T) {
		t.Parallel()
		s, ctx := newStore(t), t.Context()
		in := sampleLog("j1/CRON/t1/s0", 1, 2, t0)
		l, err := s.LogCreate(ctx, in)
		requireNoErr(t, err, "create")
		if l.ID <= 0 || l.Version <= 0 {
			t.Fatalf("create returned id %d version %d", l.ID, l.Version)
		}
		want := in
		want.ID, want.Version = l.ID, l.Version
		requireLog(t, "create result", l, want)
		got, err := s.LogGet(ctx, l.ID)
		requireNoErr(t, err, "get")
		requireLog(t, "get", got, want)
		m, err := s.LogCreate(ctx, sampleLog("j1/CRON/t2/s0", 1, 2, t0))
		requireNoErr(t, err, "create second")
		if m.ID == l.ID { // unique, not necessarily ascending (LogCreate)
			t.Fatalf("second log got the first's id %d", m.ID)
		}
		_, err = s.LogGet(ctx, 424242)
		requireIs(t, err, xjob.ErrNotFound, "get missing")
	})

	t.Run("CreateIdempotent", func(t *testing.T) {
		t.Parallel()
		s, ctx := newStore(t), t.Context()
		first, err := s.LogCreate(ctx, sampleLog("occ-1", 1, 2, t0))
		requireNoErr(t, err, "create")
		again := sampleLog("occ-1", 1, 2, t0+500)
		again.ExecutorParam = "different"
		existing, err := s.LogCreate(ctx, again)
		requireIs(t, err, xjob.ErrConflict, "create duplicate")
		requireLog(t, "duplicate create returns the existing log", existing, first)
	})

	// An occurrence without a schedule (a retry, a manual trigger) is named
	// by its ref alone: a deferred retry carries when it was first due as
	// its scheduled time, and the sweep's re-plan of the same retry may
	// not; they are one occurrence all the same.
	t.Run("CreateIdempotentWhateverUnscheduledTime", func(t *testing.T) {
		t.Parallel()
		s, ctx := newStore(t), t.Context()
		retry := sampleLog("j1/RETRY/r42/s0", 1, 2, t0)
		retry.TriggerType = xjob.TriggerRetry
		retry.ScheduledTime = t0 - 60_000
		first, err := s.LogCreate(ctx, retry)
		requireNoErr(t, err, "create")
		again := retry
		again.ScheduledTime = 0
		existing, err := s.LogCreate(ctx, again)
		requireIs(t, err, xjob.ErrConflict, "create the same retry without its first-due time")
		requireLog(t, "duplicate create returns the existing log", existing, first)
		claims, err := s.LogCreateMany(ctx, []xjob.Log{again})
		requireNoErr(t, err, "create many")
		if len(claims) != 1 || claims[0].Outcome != driver.ClaimHeld || claims[0].Log.ID != first.ID {
			t.Fatalf("claim of the same retry: %+v, want held by log %d", claims, first.ID)
		}
	})

	t.Run("ConcurrentCreateOneWinner", func(t *testing.T) {
		t.Parallel()
		s, ctx := newStore(t), t.Context()
		const n = 8
		got := make([]xjob.Log, n)
		errs := race(n, func(i int) error {
			var err error
			got[i], err = s.LogCreate(ctx, sampleLog("occ-race", 1, 2, t0+int64(i)))
			return err
		})
		w := oneWinner(t, errs, xjob.ErrConflict, "concurrent create")
		for i := range got {
			if got[i].ID != got[w].ID {
				t.Fatalf("call %d saw log %d, winner created %d", i, got[i].ID, got[w].ID)
			}
		}
	})

	t.Run("ClaimTriggeredFinish", func(t *testing.T) {
		t.Parallel()
		s, ctx := newStore(t), t.Context()
		l, err := s.LogCreate(ctx, sampleLog("occ-claim", 1, 2, t0))
		requireNoErr(t, err, "create")

		claimed, err := s.LogClaim(ctx, driver.LogClaimParams{ID: l.ID, ExpectVersion: l.Version, ClaimUntil: t0 + 90_000, TriggerTime: t0 + 60_000})
		requireNoErr(t, err, "claim")
		if claimed.ClaimUntil != t0+90_000 || claimed.TriggerTime != t0+60_000 || claimed.Version == l.Version {
			t.Fatalf("claim result: %+v", claimed)
		}
		_, err = s.LogClaim(ctx, driver.LogClaimParams{ID: l.ID, ExpectVersion: l.Version, ClaimUntil: t0 + 99_000, TriggerTime: t0 + 61_000})
		requireIs(t, err, xjob.ErrConflict, "claim with stale version")

		requireNoErr(t, s.LogTriggered(ctx, driver.LogTriggeredParams{ID: l.ID, ExecutorAddress: "http://a:1",
			TriggerCode: xjob.CodeSuccess, TriggerMsg: "ok"}), "triggered")
		got, err := s.LogGet(ctx, l.ID)
		requireNoErr(t, err, "get")
		if got.ExecutorAddress != "http://a:1" || got.TriggerCode != xjob.CodeSuccess || got.TriggerMsg != "ok" || !got.Running() {
			t.Fatalf("after triggered: %+v", got)
		}
		requireIs(t, s.LogTriggered(ctx, driver.LogTriggeredParams{ID: l.ID, ExecutorAddress: "http://b:2",
			TriggerCode: xjob.CodeFail, TriggerMsg: "second"}), xjob.ErrConflict, "second triggered")
		_, err = s.LogClaim(ctx, driver.LogClaimParams{ID: l.ID, ExpectVersion: got.Version, ClaimUntil: t0 + 99_000, TriggerTime: t0})
		requireIs(t, err, xjob.ErrConflict, "claim of a triggered log")

		fin, err := s.LogFinish(ctx, driver.LogFinishParams{ID: l.ID, HandleTime: t0 + 5000, HandleCode: xjob.CodeSuccess, HandleMsg: "done"})
		requireNoErr(t, err, "finish")
		want := got
		want.HandleTime, want.HandleCode, want.HandleMsg, want.Version = t0+5000, xjob.CodeSuccess, "done", fin.Version
		requireLog(t, "finish result", fin, want)
		_, err = s.LogFinish(ctx, driver.LogFinishParams{ID: l.ID, HandleTime: t0 + 6000, HandleCode: xjob.CodeFail, HandleMsg: "late"})
		requireIs(t, err, xjob.ErrConflict, "second finish")
		got, err = s.LogGet(ctx, l.ID)
		requireNoErr(t, err, "get")
		requireLog(t, "first result wins", got, want)

		requireMissing(t, s.LogTriggered(ctx, driver.LogTriggeredParams{ID: 424242, TriggerCode: 200}), "triggered missing")
		_, err = s.LogFinish(ctx, driver.LogFinishParams{ID: 424242, HandleCode: 200})
		requireMissing(t, err, "finish missing")
		_, err = s.LogClaim(ctx, driver.LogClaimParams{ID: 424242, ExpectVersion: 1})
		requireMissing(t, err, "claim missing")
	})

	t.Run("CallbackBeforeTriggered", func(t *testing.T) {
		t.Parallel()
		s, ctx := newStore(t), t.Context()
		l, err := s.LogCreate(ctx, sampleLog("occ-early", 1, 2, t0))
		requireNoErr(t, err, "create")
		_, err = s.LogFinish(ctx, driver.LogFinishParams{ID: l.ID, HandleTime: t0 + 5, HandleCode: xjob.CodeFail, HandleMsg: "boom"})
		requireNoErr(t, err, "finish before triggered")
		requireNoErr(t, s.LogTriggered(ctx, driver.LogTriggeredParams{ID: l.ID, ExecutorAddress: "http://a:1",
			TriggerCode: xjob.CodeSuccess, TriggerMsg: "ok"}), "triggered after finish")
		got, err := s.LogGet(ctx, l.ID)
		requireNoErr(t, err, "get")
		if got.HandleCode != xjob.CodeFail || got.HandleMsg != "boom" || got.HandleTime != t0+5 ||
			got.TriggerCode != xjob.CodeSuccess || got.ExecutorAddress != "http://a:1" {
			t.Fatalf("triggered clobbered the early result: %+v", got)
		}
	})

	t.Run("ConcurrentFinishOneWinner", func(t *testing.T) {
		t.Parallel()
		s, ctx := newStore(t), t.Context()
		l, err := s.LogCreate(ctx, sampleLog("occ-fin", 1, 2, t0))
		requireNoErr(t, err, "create")
		errs := race(6, func(i int) error {
			_, err := s.LogFinish(ctx, driver.LogFinishParams{ID: l.ID, HandleTime: t0 + int64(i), HandleCode: 200 + i, HandleMsg: fmt.Sprint(i)})
			return err
		})
		w := oneWinner(t, errs, xjob.ErrConflict, "concurrent finish")
		got, err := s.LogGet(ctx, l.ID)
		requireNoErr(t, err, "get")
		if got.HandleCode != 200+w {
			t.Fatalf("stored handle code %d, winner wrote %d", got.HandleCode, 200+w)
		}
	})

	t.Run("SetAlarm", func(t *testing.T) {
		t.Parallel()
		s, ctx := newStore(t), t.Context()
		l, err := s.LogCreate(ctx, sampleLog("occ-alarm", 1, 2, t0))
		requireNoErr(t, err, "create")
		requireNoErr(t, s.LogSetAlarm(ctx, driver.LogSetAlarmParams{ID: l.ID, From: xjob.AlarmDefault, To: xjob.AlarmLocked}), "lock")
		requireIs(t, s.LogSetAlarm(ctx, driver.LogSetAlarmParams{ID: l.ID, From: xjob.AlarmDefault, To: xjob.AlarmLocked}),
			xjob.ErrConflict, "lock twice")
		errs := race(4, func(int) error {
			return s.LogSetAlarm(ctx, driver.LogSetAlarmParams{ID: l.ID, From: xjob.AlarmLocked, To: xjob.AlarmSuccess})
		})
		oneWinner(t, errs, xjob.ErrConflict, "concurrent unlock")
		got, err := s.LogGet(ctx, l.ID)
		requireNoErr(t, err, "get")
		if got.AlarmStatus != xjob.AlarmSuccess {
			t.Fatalf("alarm status %d, want %d", got.AlarmStatus, xjob.AlarmSuccess)
		}
		requireMissing(t, s.LogSetAlarm(ctx, driver.LogSetAlarmParams{ID: 424242, From: 0, To: -1}), "set alarm missing")
	})

	t.Run("Queries", func(t *testing.T) { t.Parallel(); exerciseLogQueries(t, newStore(t)) })
	t.Run("Clear", func(t *testing.T) { t.Parallel(); exerciseLogClear(t, newStore) })
	t.Run("Batches", func(t *testing.T) { exerciseLogBatches(t, newStore) })

	t.Run("DeleteBefore", func(t *testing.T) {
		t.Parallel()
		s, ctx := newStore(t), t.Context()
		for i := range 10 {
			_, err := s.LogCreate(ctx, sampleLog(fmt.Sprint("occ-", i), 1, 2, t0+int64(i)*1000))
			requireNoErr(t, err, "create")
		}
		cut := int64(t0 + 5000) // logs 0..4 are before it
		n, err := s.LogDeleteBefore(ctx, cut, 3)
		requireNoErr(t, err, "delete")
		if n != 3 {
			t.Fatalf("first delete removed %d, want 3 (the limit)", n)
		}
		n, err = s.LogDeleteBefore(ctx, cut, 3)
		requireNoErr(t, err, "delete")
		if n != 2 {
			t.Fatalf("second delete removed %d, want 2", n)
		}
		n, err = s.LogDeleteBefore(ctx, cut, 3)
		requireNoErr(t, err, "delete")
		if n != 0 {
			t.Fatalf("third delete removed %d, want 0", n)
		}
		page, err := s.LogList(ctx, driver.LogListParams{Limit: 100})
		requireNoErr(t, err, "list")
		if len(page.Logs) != 5 {
			t.Fatalf("%d logs left, want 5", len(page.Logs))
		}
		for _, l := range page.Logs {
			if l.TriggerTime < cut {
				t.Fatalf("log at %d survived deletion before %d", l.TriggerTime, cut)
			}
		}
	})
}

func exerciseLogClear(t *testing.T, newStore func(t *testing.T) driver.LogStore) {
	// 12 logs one second apart: log i is of job 1+i%3; jobs 1 and 2 are
	// in group 1, job 3 in group 2.
	cases := []struct {
		name  string
		p     driver.LogClearParams
		calls []int // deleted per call, until 0
		gone  []int // the logs (by i) that no longer exist
	}{
		{"group older than", driver.LogClearParams{GroupID: 1, Before: t0 + 6000}, []int{4, 0}, []int{0, 1, 3, 4}},
		{"job keep newest", driver.LogClearParams{JobID: 1, KeepNewest: 2}, []int{2, 0}, []int{0, 3}},
		{"keep newest and older than", driver.LogClearParams{GroupID: 2, KeepNewest: 1, Before: t0 + 5000},
			[]int{1, 0}, []int{2}},
		{"keep more than exist", driver.LogClearParams{GroupID: 2, KeepNewest: 10}, []int{0}, nil},
		{"job and group", driver.LogClearParams{GroupID: 1, JobID: 3}, []int{0}, nil},
		{"all", driver.LogClearParams{}, []int{12, 0}, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}},
		{"limit pages oldest first", driver.LogClearParams{GroupID: 1, Limit: 3}, []int{3, 3, 2, 0},
			[]int{0, 1, 3, 4, 6, 7, 9, 10}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, ctx := newStore(t), t.Context()
			ids := make([]int64, 12)
			for i := range ids {
				job := int64(1 + i%3)
				group := int64(1)
				if job == 3 {
					group = 2
				}
				l, err := s.LogCreate(ctx, sampleLog(fmt.Sprint("clear-", i), job, group, t0+int64(i)*1000))
				requireNoErr(t, err, "create")
				ids[i] = l.ID
			}
			for k, want := range tc.calls {
				n, err := s.LogClear(ctx, tc.p)
				requireNoErr(t, err, "clear")
				if n != want {
					t.Fatalf("call %d deleted %d, want %d", k, n, want)
				}
			}
			for i, id := range ids {
				_, err := s.LogGet(ctx, id)
				gone := slices.Contains(tc.gone, i)
				switch {
				case gone && !errors.Is(err, xjob.ErrNotFound):
					t.Errorf("log %d (id %d) survived: %v", i, id, err)
				case !gone && err != nil:
					t.Errorf("log %d (id %d) was deleted: %v", i, id, err)
				}
			}
		})
	}
}

// logState drives a created log to one of the states the queries tell apart.
type logState int

const (
	stCreated logState = iota
	stRunning
	stSuccess
	stTriggerFailed
	stHandleFailed
	stTimeout
)

func exerciseLogQueries(t *testing.T, s driver.LogStore) {
	ctx := t.Context()
	var all []xjob.Log
	for i := range 24 {
		job, group := int64(1+i%2), int64(10+10*(i%3))
		l, err := s.LogCreate(ctx, sampleLog(fmt.Sprint("q-", i), job, group, t0+int64(i)*1000))
		requireNoErr(t, err, "create")
		st := logState(i % 6)
		if st != stCreated {
			code := xjob.CodeSuccess
			if st == stTriggerFailed {
				code = xjob.CodeFail
			}
			requireNoErr(t, s.LogTriggered(ctx, driver.LogTriggeredParams{ID: l.ID, ExecutorAddress: "http://a:1", TriggerCode: code}), "triggered")
		}
		var handle int
		switch st {
		case stSuccess:
			handle = xjob.CodeSuccess
		case stHandleFailed:
			handle = xjob.CodeFail
		case stTimeout:
			handle = xjob.CodeTimeout
		}
		if handle != 0 {
			_, err := s.LogFinish(ctx, driver.LogFinishParams{ID: l.ID, HandleTime: l.TriggerTime + 1, HandleCode: handle})
			requireNoErr(t, err, "finish")
		}
		l, err = s.LogGet(ctx, l.ID)
		requireNoErr(t, err, "get")
		all = append(all, l)
	}
	// One failed log is already being handled by the fail monitor.
	var locked int64
	for _, l := range all {
		if l.Failed() {
			locked = l.ID
			requireNoErr(t, s.LogSetAlarm(ctx, driver.LogSetAlarmParams{ID: l.ID, From: 0, To: xjob.AlarmLocked}), "lock")
			break
		}
	}

	newestFirst := slices.Clone(all)
	slices.Reverse(newestFirst)
	success := func(l xjob.Log) bool { return l.Handled() && l.HandleCode == xjob.CodeSuccess }
	cases := []struct {
		name string
		p    driver.LogListParams
		keep func(xjob.Log) bool
	}{
		{"all", driver.LogListParams{}, func(xjob.Log) bool { return true }},
		{"status all", driver.LogListParams{Status: xjob.LogAll}, func(xjob.Log) bool { return true }},
		{"job", driver.LogListParams{JobID: 2}, func(l xjob.Log) bool { return l.JobID == 2 }},
		{"group", driver.LogListParams{GroupID: 20}, func(l xjob.Log) bool { return l.GroupID == 20 }},
		{"job and group", driver.LogListParams{JobID: 1, GroupID: 30}, func(l xjob.Log) bool { return l.JobID == 1 && l.GroupID == 30 }},
		{"success", driver.LogListParams{Status: xjob.LogSuccess}, success},
		{"fail", driver.LogListParams{Status: xjob.LogFail}, func(l xjob.Log) bool { return l.Failed() }},
		{"running", driver.LogListParams{Status: xjob.LogRunning}, func(l xjob.Log) bool { return l.Running() }},
		{"time range", driver.LogListParams{From: t0 + 3000, To: t0 + 9000},
			func(l xjob.Log) bool { return l.TriggerTime >= t0+3000 && l.TriggerTime <= t0+9000 }},
		{"from only", driver.LogListParams{From: t0 + 20_000}, func(l xjob.Log) bool { return l.TriggerTime >= t0+20_000 }},
		{"group, fail, range", driver.LogListParams{GroupID: 10, Status: xjob.LogFail, From: t0, To: t0 + 15_000},
			func(l xjob.Log) bool { return l.GroupID == 10 && l.Failed() && l.TriggerTime <= t0+15_000 }},
	}
	for _, c := range cases {
		var want []int64
		for _, l := range newestFirst {
			if c.keep(l) {
				want = append(want, l.ID)
			}
		}
		for _, limit := range []int{1000, 3} {
			p := c.p
			p.Limit = limit
			var got []xjob.Log
			for range 100 {
				page, err := s.LogList(ctx, p)
				requireNoErr(t, err, c.name)
				if len(page.Logs) > limit {
					t.Fatalf("%s: page of %d with limit %d", c.name, len(page.Logs), limit)
				}
				got = append(got, page.Logs...)
				if page.Next == "" {
					break
				}
				p.Cursor = page.Next
			}
			requireIDs(t, fmt.Sprintf("%s (limit %d)", c.name, limit), ids(got, logID), want)
		}
	}

	before := int64(t0 + 17_000)
	var wantRunning, wantFailed []int64
	for _, l := range all { // all is oldest first
		if l.Running() && l.TriggerTime <= before {
			wantRunning = append(wantRunning, l.ID)
		}
		if l.Failed() && l.ID != locked && l.TriggerTime <= before {
			wantFailed = append(wantFailed, l.ID)
		}
	}
	running, err := s.LogsRunning(ctx, before, 1000)
	requireNoErr(t, err, "running")
	requireIDs(t, "running, oldest first", ids(running, logID), wantRunning)
	running, err = s.LogsRunning(ctx, before, 1)
	requireNoErr(t, err, "running limit 1")
	requireIDs(t, "running limit 1", ids(running, logID), wantRunning[:1])

	failed, err := s.LogsFailedUnalarmed(ctx, before, 1000)
	requireNoErr(t, err, "failed unalarmed")
	gotFailed := ids(failed, logID)
	slices.Sort(gotFailed)
	slices.Sort(wantFailed)
	requireIDs(t, "failed unalarmed", gotFailed, wantFailed)
	failed, err = s.LogsFailedUnalarmed(ctx, before, 2)
	requireNoErr(t, err, "failed unalarmed limit 2")
	if len(failed) != 2 {
		t.Fatalf("failed unalarmed with limit 2 returned %d", len(failed))
	}
	if len(wantRunning) < 2 || len(wantFailed) < 3 || locked == 0 {
		t.Fatal(errors.New("fixture too small to exercise the queries"))
	}
}
