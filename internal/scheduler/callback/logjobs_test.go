package callback_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/scheduler/callback"
	"github.com/xjobdev/xjob/pkg/driver"
	"github.com/xjobdev/xjob/pkg/protocol"
)

// plainStore is the SQLite store without its LogJobs: what the callback
// sees of a store that does not offer it (the other stores). It counts
// the whole-log reads.
type plainStore struct {
	driver.Store
	reads    *atomic.Int64
	finished *sync.Map // the log ids LogFinishMany was asked to write
}

func (s plainStore) LogFinishMany(ctx context.Context, ps []driver.LogFinishParams) ([]driver.LogFinished, error) {
	for _, p := range ps {
		s.finished.Store(p.ID, true)
	}
	return s.Store.LogFinishMany(ctx, ps)
}

func (s plainStore) LogGetMany(ctx context.Context, ids []int64) ([]xjob.Log, error) {
	s.reads.Add(1)
	return s.Store.LogGetMany(ctx, ids)
}

// wrappedStore hides the store's LogJobs as local mode's report batcher
// does, and gives it back through Unwrap.
type wrappedStore struct{ plainStore }

func (s wrappedStore) Unwrap() driver.Store { return s.plainStore.Store }

// Both ways of reading before the write — LogJobs (found on the store or
// through a wrapper's Unwrap), and the logs read whole then JobGetMany —
// give every item the same outcome: a success
// recorded with its job's child summary and its children triggered, a
// failure recorded, a repeat in the batch and a log already finished
// answered as repeats, an unknown id as not found, a log whose job was
// deleted recorded without a summary.
func TestCallbackReadPathsAgree(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		store func(e *env, p plainStore) driver.Store
		reads bool // whether the logs are read whole
	}{
		{"LogJobs", func(e *env, _ plainStore) driver.Store { return e.db }, false},
		{"LogJobs through Unwrap", func(e *env, p plainStore) driver.Store { return wrappedStore{p} }, false},
		{"LogGetMany and JobGetMany", func(e *env, p plainStore) driver.Store { return p }, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			var reads atomic.Int64
			var finished sync.Map
			st := tc.store(e, plainStore{Store: e.db, reads: &reads, finished: &finished})
			svc, err := callback.New(callback.Config{Store: st, Queues: e.db, Alarmer: e.alarm, Clock: e.clk})
			if err != nil {
				t.Fatal(err)
			}
			child := e.job(0)
			parent := e.job(0, child.ID)
			gone := e.job(0)
			ok := e.triggered(parent, 200, 0, "")
			bad := e.triggered(child, 200, 0, "")
			done := e.triggered(child, 200, 0, "")
			orphan := e.triggered(gone, 200, 0, "")
			if err := e.callback(done.ID, 200, "first"); err != nil {
				t.Fatal(err)
			}
			if err := e.db.JobDelete(e.ctx, gone.ID); err != nil {
				t.Fatal(err)
			}
			e.tasks() // nothing yet
			errs := svc.Callback(e.ctx, []protocol.HandleCallbackParam{
				{LogID: ok.ID, HandleCode: 200, HandleMsg: "ran"},
				{LogID: bad.ID, HandleCode: 500, HandleMsg: "boom"},
				{LogID: ok.ID, HandleCode: 500, HandleMsg: "again"},
				{LogID: done.ID, HandleCode: 500, HandleMsg: "late"},
				{LogID: 987654, HandleCode: 200},
				{LogID: orphan.ID, HandleCode: 200, HandleMsg: "alone"},
			})
			want := []error{nil, nil, xjob.ErrConflict, xjob.ErrConflict, xjob.ErrNotFound, nil}
			for i, err := range errs {
				if (want[i] == nil) != (err == nil) || (want[i] != nil && !errors.Is(err, want[i])) {
					t.Errorf("item %d: %v, want %v", i, err, want[i])
				}
			}
			if got := e.get(ok.ID); got.HandleCode != 200 || !strings.HasPrefix(got.HandleMsg, "ran") ||
				got.HandleMsg != callback.HandleMsg("ran", callback.ChildSummary([]int64{child.ID})) {
				t.Errorf("success stored as %d %q", got.HandleCode, got.HandleMsg)
			}
			if got := e.get(bad.ID); got.HandleCode != 500 || got.HandleMsg != "boom" {
				t.Errorf("failure stored as %d %q", got.HandleCode, got.HandleMsg)
			}
			if got := e.get(done.ID); got.HandleMsg != "first" {
				t.Errorf("late result overwrote the first: %q", got.HandleMsg)
			}
			if got := e.get(orphan.ID); got.HandleCode != 200 || got.HandleMsg != "alone" {
				t.Errorf("orphan stored as %d %q", got.HandleCode, got.HandleMsg)
			}
			if _, asked := finished.Load(done.ID); asked {
				t.Errorf("the repeat of a finished log went to the write")
			}
			if got := reads.Load() > 0; got != tc.reads {
				t.Errorf("logs read whole: %v, want %v", got, tc.reads)
			}
			tasks := e.tasks()
			if len(tasks) != 1 || tasks[0].Occurrence.JobID != child.ID || tasks[0].Occurrence.Type != xjob.TriggerParent {
				t.Errorf("tasks %+v, want the one child trigger", tasks)
			}
		})
	}
}
