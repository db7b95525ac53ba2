package drivertest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/pkg/driver"
)

// exerciseLogBatches checks the batch methods of LogStore: per-item
// conditional semantics inside one call (duplicates, partial conflicts,
// take-over of an expired claim) and across concurrent calls.
func exerciseLogBatches(t *testing.T, newStore func(t *testing.T) driver.LogStore) {
	t.Run("GetMany", func(t *testing.T) {
		t.Parallel()
		s, ctx := newStore(t), t.Context()
		var want []int64
		for i := range 3 {
			l, err := s.LogCreate(ctx, sampleLog(fmt.Sprintf("occ-gm-%d", i), 1, 2, t0))
			requireNoErr(t, err, "create")
			want = append(want, l.ID)
		}
		got, err := s.LogGetMany(ctx, []int64{want[2], 424242, want[0], want[2], want[1]})
		requireNoErr(t, err, "get many")
		gotIDs := ids(got, logID)
		slices.Sort(gotIDs)
		slices.Sort(want)
		requireIDs(t, "get many", gotIDs, want)
		one, err := s.LogGet(ctx, want[1])
		requireNoErr(t, err, "get")
		for _, l := range got {
			if l.ID == one.ID {
				requireLog(t, "get many returns whole logs", l, one)
			}
		}
		none, err := s.LogGetMany(ctx, nil)
		requireNoErr(t, err, "get many of nothing")
		if len(none) != 0 {
			t.Fatalf("get many of nothing returned %d logs", len(none))
		}
	})

	t.Run("CreateManyNewAndRepeated", func(t *testing.T) {
		t.Parallel()
		s, ctx := newStore(t), t.Context()
		batch := []xjob.Log{
			sampleLog("occ-a", 1, 2, t0),
			sampleLog("occ-b", 1, 2, t0),
			sampleLog("occ-a", 1, 2, t0+1), // the same occurrence twice in one bucket
			sampleLog("", 1, 2, t0),        // refused alone
		}
		res, err := s.LogCreateMany(ctx, batch)
		requireNoErr(t, err, "create many")
		if len(res) != len(batch) {
			t.Fatalf("create many returned %d results for %d logs", len(res), len(batch))
		}
		for i := range 2 {
			if res[i].Outcome != driver.ClaimCreated || res[i].Err != nil || res[i].Log.ID <= 0 || res[i].Log.Version <= 0 {
				t.Fatalf("item %d: %+v, want a created log", i, res[i])
			}
			want := batch[i]
			want.ID, want.Version = res[i].Log.ID, res[i].Log.Version
			requireLog(t, "created log", res[i].Log, want)
			got, err := s.LogGet(ctx, want.ID)
			requireNoErr(t, err, "get created")
			requireLog(t, "stored log", got, want)
		}
		if res[0].Log.ID == res[1].Log.ID {
			t.Fatalf("two occurrences got one log id %d", res[0].Log.ID)
		}
		if res[2].Outcome != driver.ClaimHeld || res[2].Log.ID != res[0].Log.ID {
			t.Fatalf("repeat in the batch: %+v, want held by log %d", res[2], res[0].Log.ID)
		}
		var verr *xjob.ValidationError
		if res[3].Outcome != 0 || !errors.As(res[3].Err, &verr) {
			t.Fatalf("empty occurrence id: %+v, want a validation error", res[3])
		}
	})

	t.Run("CreateManyRedeliveryAndTakeover", func(t *testing.T) {
		t.Parallel()
		s, ctx := newStore(t), t.Context()
		first, err := s.LogCreateMany(ctx, []xjob.Log{
			sampleLog("occ-done", 1, 2, t0), sampleLog("occ-held", 1, 2, t0), sampleLog("occ-dead", 1, 2, t0-40_000),
		})
		requireNoErr(t, err, "first delivery")
		done, held, dead := first[0].Log, first[1].Log, first[2].Log
		dead.ExecutorAddress = "" // as created
		requireNoErr(t, s.LogTriggered(ctx, driver.LogTriggeredParams{ID: done.ID, ExecutorAddress: "http://a:1",
			TriggerCode: xjob.CodeSuccess, TriggerMsg: "ok"}), "trigger one")

		// The bucket comes back 5 s later: one log triggered, one claimed
		// and still valid, one whose dispatcher died 35 s ago; one new.
		at := int64(t0 + 5_000)
		again := []xjob.Log{sampleLog("occ-done", 1, 2, at), sampleLog("occ-held", 1, 2, at),
			sampleLog("occ-dead", 1, 2, at), sampleLog("occ-new", 1, 2, at), sampleLog("occ-dead", 1, 2, at)}
		res, err := s.LogCreateMany(ctx, again)
		requireNoErr(t, err, "redelivery")
		if res[0].Outcome != driver.ClaimTriggered || res[0].Log.ID != done.ID || !res[0].Log.Triggered() {
			t.Fatalf("triggered occurrence: %+v", res[0])
		}
		if res[1].Outcome != driver.ClaimHeld {
			t.Fatalf("claimed occurrence: %+v, want held", res[1])
		}
		requireLog(t, "held log as stored", res[1].Log, held)
		tk := res[2]
		if tk.Outcome != driver.ClaimTakenOver || tk.Log.ID != dead.ID || tk.Log.ClaimUntil != at+30_000 ||
			tk.Log.TriggerTime != at || tk.Log.Version <= dead.Version {
			t.Fatalf("expired claim: %+v, want taken over until %d", tk, at+30_000)
		}
		requireLog(t, "taken-over log's previous state", tk.Prev, dead)
		if res[3].Outcome != driver.ClaimCreated {
			t.Fatalf("new occurrence: %+v", res[3])
		}
		if res[4].Outcome != driver.ClaimHeld || res[4].Log.ID != dead.ID {
			t.Fatalf("repeat of the taken-over occurrence: %+v, want held", res[4])
		}
		got, err := s.LogGet(ctx, dead.ID)
		requireNoErr(t, err, "get taken over")
		requireLog(t, "stored take-over", got, tk.Log)
	})

	t.Run("ConcurrentCreateManyOneClaimEach", func(t *testing.T) {
		t.Parallel()
		s, ctx := newStore(t), t.Context()
		dead, err := s.LogCreate(ctx, sampleLog("occ-expired", 1, 2, t0-60_000))
		requireNoErr(t, err, "create expired")
		const n = 6
		occs := []string{"occ-x", "occ-y", "occ-expired"}
		res := make([][]driver.LogCreated, n)
		errs := race(n, func(i int) error {
			var batch []xjob.Log
			for _, o := range occs {
				batch = append(batch, sampleLog(o, 1, 2, t0+int64(i)))
			}
			var err error
			res[i], err = s.LogCreateMany(ctx, batch)
			return err
		})
		for i, err := range errs {
			requireNoErr(t, err, fmt.Sprintf("caller %d", i))
		}
		for j, o := range occs {
			winners, id := 0, int64(0)
			for i := range n {
				r := res[i][j]
				if r.Outcome == driver.ClaimCreated || r.Outcome == driver.ClaimTakenOver {
					winners++
				} else if r.Outcome != driver.ClaimHeld {
					t.Fatalf("%s caller %d: outcome %d, want created, taken over or held", o, i, r.Outcome)
				}
				if id != 0 && r.Log.ID != id {
					t.Fatalf("%s: callers saw logs %d and %d", o, id, r.Log.ID)
				}
				id = r.Log.ID
			}
			if winners != 1 {
				t.Fatalf("%s: %d callers may trigger it, want 1", o, winners)
			}
			if o == "occ-expired" && id != dead.ID {
				t.Fatalf("expired occurrence got log %d, want %d", id, dead.ID)
			}
		}
	})

	t.Run("BucketOfOneSecond", func(t *testing.T) {
		t.Parallel()
		// A busy second: 300 jobs' fires of one scheduled second (a ring
		// bucket), claimed, recorded and finished in batches, then
		// delivered again.
		s, ctx := newStore(t), t.Context()
		const fire = t0 + 7_000
		batch := make([]xjob.Log, 300)
		for i := range batch {
			job := int64(1000 + i)
			batch[i] = sampleLog(fmt.Sprintf("j%d/t%d/s0", job, fire), job, 2, fire+int64(i%40))
		}
		res, err := s.LogCreateMany(ctx, batch)
		requireNoErr(t, err, "create bucket")
		ids := make([]int64, len(res))
		seen := map[int64]bool{}
		for i, r := range res {
			if r.Outcome != driver.ClaimCreated || seen[r.Log.ID] {
				t.Fatalf("fire %d: %+v (id seen before: %v)", i, r, seen[r.Log.ID])
			}
			seen[r.Log.ID], ids[i] = true, r.Log.ID
		}
		replies := make([]driver.LogTriggeredParams, len(ids))
		results := make([]driver.LogFinishParams, 0, len(ids))
		for i, id := range ids {
			replies[i] = driver.LogTriggeredParams{ID: id, ExecutorAddress: "http://a:1", TriggerCode: xjob.CodeSuccess, TriggerMsg: "ok"}
			if i%2 == 0 {
				results = append(results, driver.LogFinishParams{ID: id, HandleTime: fire + 100, HandleCode: xjob.CodeSuccess, HandleMsg: fmt.Sprint(i)})
			}
		}
		errs, err := s.LogTriggeredMany(ctx, replies)
		requireNoErr(t, err, "record bucket")
		for i, e := range errs {
			requireNoErr(t, e, fmt.Sprintf("reply %d", i))
		}
		fin, err := s.LogFinishMany(ctx, results)
		requireNoErr(t, err, "finish half")
		for i, f := range fin {
			requireNoErr(t, f.Err, fmt.Sprintf("result %d", i))
		}
		got, err := s.LogGetMany(ctx, ids)
		requireNoErr(t, err, "get bucket")
		if len(got) != len(ids) {
			t.Fatalf("get many returned %d of %d logs", len(got), len(ids))
		}
		byID := map[int64]xjob.Log{}
		for _, l := range got {
			byID[l.ID] = l
		}
		for i, id := range ids {
			l := byID[id]
			if l.OccurrenceID != batch[i].OccurrenceID || !l.Triggered() || l.Handled() != (i%2 == 0) {
				t.Fatalf("fire %d after the bucket: %+v", i, l)
			}
		}
		again, err := s.LogCreateMany(ctx, batch)
		requireNoErr(t, err, "bucket delivered again")
		for i, r := range again {
			if r.Outcome != driver.ClaimTriggered || r.Log.ID != ids[i] {
				t.Fatalf("repeat of fire %d: %+v, want triggered log %d", i, r, ids[i])
			}
		}
		page, err := s.LogList(ctx, driver.LogListParams{From: fire, To: fire + 1000, Status: xjob.LogRunning, Limit: 1000})
		requireNoErr(t, err, "list the bucket's running logs")
		if len(page.Logs) != 150 {
			t.Fatalf("%d running logs listed, want 150", len(page.Logs))
		}
		for i := 1; i < len(page.Logs); i++ {
			a, b := page.Logs[i-1], page.Logs[i]
			if a.TriggerTime < b.TriggerTime || a.TriggerTime == b.TriggerTime && a.ID < b.ID {
				t.Fatalf("list not newest first at %d: %d/%d before %d/%d", i, a.TriggerTime, a.ID, b.TriggerTime, b.ID)
			}
		}
	})

	t.Run("TriggeredMany", func(t *testing.T) {
		t.Parallel()
		s, ctx := newStore(t), t.Context()
		a, err := s.LogCreate(ctx, sampleLog("occ-ta", 1, 2, t0))
		requireNoErr(t, err, "create a")
		b, err := s.LogCreate(ctx, sampleLog("occ-tb", 1, 2, t0))
		requireNoErr(t, err, "create b")
		c, err := s.LogCreate(ctx, sampleLog("occ-tc", 1, 2, t0))
		requireNoErr(t, err, "create c")
		requireNoErr(t, s.LogTriggered(ctx, driver.LogTriggeredParams{ID: c.ID, ExecutorAddress: "http://c:1",
			TriggerCode: xjob.CodeFail, TriggerMsg: "earlier"}), "trigger c")
		errs, err := s.LogTriggeredMany(ctx, []driver.LogTriggeredParams{
			{ID: a.ID, ExecutorAddress: "http://a:1", TriggerCode: xjob.CodeSuccess, TriggerMsg: "ok a"},
			{ID: a.ID, ExecutorAddress: "http://a:2", TriggerCode: xjob.CodeFail, TriggerMsg: "repeat"},
			{ID: b.ID, ExecutorAddress: "http://b:1", TriggerCode: xjob.CodeFail, TriggerMsg: "fail b"},
			{ID: c.ID, ExecutorAddress: "http://c:2", TriggerCode: xjob.CodeSuccess, TriggerMsg: "late"},
			{ID: 424242, TriggerCode: xjob.CodeSuccess},
		})
		requireNoErr(t, err, "triggered many")
		requireNoErr(t, errs[0], "first reply for a")
		requireIs(t, errs[1], xjob.ErrConflict, "second reply for a in the batch")
		requireNoErr(t, errs[2], "reply for b")
		requireIs(t, errs[3], xjob.ErrConflict, "reply for c, triggered before")
		requireMissing(t, errs[4], "reply for a missing log")
		for _, w := range []struct {
			id        int64
			addr, msg string
			code      int
		}{{a.ID, "http://a:1", "ok a", 200}, {b.ID, "http://b:1", "fail b", 500}, {c.ID, "http://c:1", "earlier", 500}} {
			got, err := s.LogGet(ctx, w.id)
			requireNoErr(t, err, "get")
			if got.ExecutorAddress != w.addr || got.TriggerCode != w.code || got.TriggerMsg != w.msg {
				t.Fatalf("log %d after triggered many: %+v, want %s %d %q", w.id, got, w.addr, w.code, w.msg)
			}
		}
		if got, err := s.LogTriggeredMany(ctx, nil); err != nil || len(got) != 0 {
			t.Fatalf("triggered many of nothing: %v, %v", got, err)
		}
	})

	t.Run("FinishMany", func(t *testing.T) {
		t.Parallel()
		s, ctx := newStore(t), t.Context()
		a, err := s.LogCreate(ctx, sampleLog("occ-fa", 1, 2, t0))
		requireNoErr(t, err, "create a")
		b, err := s.LogCreate(ctx, sampleLog("occ-fb", 1, 2, t0))
		requireNoErr(t, err, "create b")
		c, err := s.LogCreate(ctx, sampleLog("occ-fc", 1, 2, t0))
		requireNoErr(t, err, "create c")
		requireNoErr(t, s.LogTriggered(ctx, driver.LogTriggeredParams{ID: a.ID, ExecutorAddress: "http://a:1",
			TriggerCode: xjob.CodeSuccess, TriggerMsg: "ok"}), "trigger a")
		_, err = s.LogFinish(ctx, driver.LogFinishParams{ID: c.ID, HandleTime: t0 + 1, HandleCode: xjob.CodeSuccess, HandleMsg: "first"})
		requireNoErr(t, err, "finish c")
		res, err := s.LogFinishMany(ctx, []driver.LogFinishParams{
			{ID: a.ID, HandleTime: t0 + 10, HandleCode: xjob.CodeSuccess, HandleMsg: "done a"},
			{ID: a.ID, HandleTime: t0 + 11, HandleCode: xjob.CodeFail, HandleMsg: "repeat"},
			{ID: b.ID, HandleTime: t0 + 12, HandleCode: xjob.CodeFail, HandleMsg: "boom b"}, // before its trigger is recorded
			{ID: c.ID, HandleTime: t0 + 13, HandleCode: xjob.CodeFail, HandleMsg: "late"},
			{ID: 424242, HandleCode: xjob.CodeSuccess},
		})
		requireNoErr(t, err, "finish many")
		requireNoErr(t, res[0].Err, "first result for a")
		if l := res[0].Log; l.ID != a.ID || l.HandleCode != xjob.CodeSuccess || l.HandleMsg != "done a" ||
			l.HandleTime != t0+10 || l.TriggerCode != xjob.CodeSuccess || l.ExecutorAddress != "http://a:1" {
			t.Fatalf("finish many result for a: %+v", l)
		}
		requireIs(t, res[1].Err, xjob.ErrConflict, "second result for a in the batch")
		requireNoErr(t, res[2].Err, "result for b")
		if res[2].Log.HandleCode != xjob.CodeFail || res[2].Log.Triggered() {
			t.Fatalf("finish many result for b: %+v", res[2].Log)
		}
		requireIs(t, res[3].Err, xjob.ErrConflict, "result for c, finished before")
		requireMissing(t, res[4].Err, "result for a missing log")
		for _, r := range res[:3] {
			if r.Err != nil {
				continue
			}
			got, err := s.LogGet(ctx, r.Log.ID)
			requireNoErr(t, err, "get")
			requireLog(t, "stored result", got, r.Log)
		}
		got, err := s.LogGet(ctx, c.ID)
		requireNoErr(t, err, "get c")
		if got.HandleMsg != "first" {
			t.Fatalf("first result for c lost: %+v", got)
		}
		// b's trigger reply arrives after its result: both are kept.
		errs, err := s.LogTriggeredMany(ctx, []driver.LogTriggeredParams{{ID: b.ID, ExecutorAddress: "http://b:1",
			TriggerCode: xjob.CodeSuccess, TriggerMsg: "ok"}})
		requireNoErr(t, err, "triggered after finish")
		requireNoErr(t, errs[0], "triggered after finish")
		got, err = s.LogGet(ctx, b.ID)
		requireNoErr(t, err, "get b")
		if got.HandleCode != xjob.CodeFail || got.HandleMsg != "boom b" || got.TriggerCode != xjob.CodeSuccess {
			t.Fatalf("reply clobbered the early result: %+v", got)
		}
	})

	t.Run("ConcurrentFinishManyOneRound", func(t *testing.T) {
		t.Parallel()
		// Writers racing on distinct logs of one second, each asking for
		// one round (driver.OneRound): a result is recorded or answered
		// driver.ErrContended with nothing written, never lost or taken
		// for another's; what was contended is recorded when sent again.
		s, ctx := newStore(t), t.Context()
		const n = 12
		batch := make([]xjob.Log, n)
		for i := range batch {
			batch[i] = sampleLog(fmt.Sprintf("j%d/t%d/s0", 500+i, t0), int64(500+i), 2, t0)
		}
		res, err := s.LogCreateMany(ctx, batch)
		requireNoErr(t, err, "create")
		logIDs := make([]int64, n)
		for i, r := range res {
			requireNoErr(t, r.Err, "create item")
			logIDs[i] = r.Log.ID
		}
		finish := func(ctx context.Context, i int) error {
			out, err := s.LogFinishMany(ctx, []driver.LogFinishParams{{ID: logIDs[i], HandleTime: t0 + 1, HandleCode: 200 + i}})
			if err != nil {
				return err
			}
			if out[0].Err == nil && out[0].Log.HandleCode != 200+i {
				return fmt.Errorf("finished log %d reads code %d, want %d", logIDs[i], out[0].Log.HandleCode, 200+i)
			}
			return out[0].Err
		}
		errs := race(n, func(i int) error { return finish(driver.OneRound(ctx), i) })
		for i, err := range errs {
			if err != nil && !errors.Is(err, driver.ErrContended) {
				t.Fatalf("writer %d: %v, want recorded or driver.ErrContended", i, err)
			}
			if errors.Is(err, driver.ErrContended) {
				got, gerr := s.LogGet(ctx, logIDs[i])
				requireNoErr(t, gerr, "get contended")
				if got.HandleCode != xjob.CodeNone {
					t.Fatalf("writer %d was told contended, yet log %d has code %d", i, logIDs[i], got.HandleCode)
				}
				requireNoErr(t, finish(ctx, i), "finish again")
			}
		}
		got, err := s.LogGetMany(ctx, logIDs)
		requireNoErr(t, err, "get many")
		for _, l := range got {
			i := slices.Index(logIDs, l.ID)
			if l.HandleCode != 200+i {
				t.Fatalf("log %d: code %d, want %d", l.ID, l.HandleCode, 200+i)
			}
		}
	})

	t.Run("ConcurrentFinishManyOneWinner", func(t *testing.T) {
		t.Parallel()
		s, ctx := newStore(t), t.Context()
		l, err := s.LogCreate(ctx, sampleLog("occ-fm-race", 1, 2, t0))
		requireNoErr(t, err, "create")
		errs := race(6, func(i int) error {
			res, err := s.LogFinishMany(ctx, []driver.LogFinishParams{{ID: l.ID, HandleTime: t0 + int64(i), HandleCode: 200 + i}})
			if err != nil {
				return err
			}
			return res[0].Err
		})
		w := oneWinner(t, errs, xjob.ErrConflict, "concurrent finish many")
		got, err := s.LogGet(ctx, l.ID)
		requireNoErr(t, err, "get")
		if got.HandleCode != 200+w {
			t.Fatalf("stored handle code %d, winner wrote %d", got.HandleCode, 200+w)
		}
	})
}
