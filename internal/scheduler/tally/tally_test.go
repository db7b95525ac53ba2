package tally_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/adapter/sqlitestore"
	"github.com/xjobdev/xjob/internal/scheduler/tally"
	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/driver"
)

var t0 = time.UnixMilli(1_800_000_000_000).UTC()

// counting wraps the real store: it counts ReportAdd writes and can be
// told to fail them (a store outage).
type counting struct {
	driver.ReportStore
	adds atomic.Int64
	fail atomic.Bool
}

func (c *counting) ReportAdd(ctx context.Context, d xjob.ReportDay) error {
	if c.fail.Load() {
		return errors.New("injected outage")
	}
	c.adds.Add(1)
	return c.ReportStore.ReportAdd(ctx, d)
}

// setup is a Batcher with options o (its Clock a fake at t0) over a
// counting SQLite report store.
func setup(t *testing.T, o tally.Options) (*sqlitestore.DB, *counting, *clock.Fake, *tally.Batcher) {
	t.Helper()
	clk := clock.NewFake(t0)
	o.Clock = clk
	db, err := sqlitestore.Open(context.Background(), filepath.Join(t.TempDir(), "x.db"), sqlitestore.Options{Shards: 1, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	c := &counting{ReportStore: db}
	b, err := tally.New(c, o)
	if err != nil {
		t.Fatal(err)
	}
	return db, c, clk, b
}

func list(t *testing.T, s driver.ReportStore) map[string]xjob.ReportDay {
	t.Helper()
	days, err := s.ReportList(context.Background(), driver.ReportListParams{From: "2000-01-01", To: "2100-01-01"})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]xjob.ReportDay{}
	for _, d := range days {
		out[d.Day] = d
	}
	return out
}

func TestFlushWritesOneAddPerDay(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		deltas []xjob.ReportDay
		want   map[string]xjob.ReportDay
		writes int64
	}{
		{name: "nothing", writes: 0, want: map[string]xjob.ReportDay{}},
		{
			name: "one day folded",
			deltas: []xjob.ReportDay{
				{Day: "2027-01-15", RunningCount: 1}, {Day: "2027-01-15", RunningCount: 1},
				{Day: "2027-01-15", FailCount: 1}, {Day: "2027-01-15", RunningCount: -1, SucCount: 1},
			},
			want:   map[string]xjob.ReportDay{"2027-01-15": {Day: "2027-01-15", RunningCount: 1, SucCount: 1, FailCount: 1}},
			writes: 1,
		},
		{
			name: "two days",
			deltas: []xjob.ReportDay{
				{Day: "2027-01-15", RunningCount: 1}, {Day: "2027-01-16", FailCount: 2}, {Day: "2027-01-15", SucCount: 3},
			},
			want: map[string]xjob.ReportDay{
				"2027-01-15": {Day: "2027-01-15", RunningCount: 1, SucCount: 3},
				"2027-01-16": {Day: "2027-01-16", FailCount: 2},
			},
			writes: 2,
		},
		{
			name: "one write per day and group",
			deltas: []xjob.ReportDay{
				{Day: "2027-01-15", GroupID: 3, RunningCount: 1}, {Day: "2027-01-15", GroupID: 4, FailCount: 2},
				{Day: "2027-01-15", GroupID: 3, RunningCount: -1, SucCount: 1}, {Day: "2027-01-16", GroupID: 3, SucCount: 1},
			},
			want: map[string]xjob.ReportDay{
				"2027-01-15": {Day: "2027-01-15", SucCount: 1, FailCount: 2},
				"2027-01-16": {Day: "2027-01-16", SucCount: 1},
			},
			writes: 3,
		},
		{
			name:   "a group's deltas that cancel out write nothing",
			deltas: []xjob.ReportDay{{Day: "2027-01-15", GroupID: 3, RunningCount: 1}, {Day: "2027-01-15", GroupID: 4, RunningCount: -1}, {Day: "2027-01-15", GroupID: 3, RunningCount: -1}},
			want:   map[string]xjob.ReportDay{"2027-01-15": {Day: "2027-01-15", RunningCount: -1}},
			writes: 1,
		},
		{
			name:   "deltas that cancel out write nothing",
			deltas: []xjob.ReportDay{{Day: "2027-01-15", RunningCount: 1}, {Day: "2027-01-15", RunningCount: -1}},
			want:   map[string]xjob.ReportDay{},
			writes: 0,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			db, c, _, b := setup(t, tally.Options{})
			ctx := context.Background()
			for _, d := range tt.deltas {
				if err := b.ReportAdd(ctx, d); err != nil {
					t.Fatal(err)
				}
			}
			if n := c.adds.Load(); n != 0 {
				t.Fatalf("%d writes before the flush, want none", n)
			}
			if err := b.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			if n := c.adds.Load(); n != tt.writes {
				t.Fatalf("%d writes, want %d", n, tt.writes)
			}
			got := list(t, db)
			if len(got) != len(tt.want) {
				t.Fatalf("stored %+v, want %+v", got, tt.want)
			}
			for day, w := range tt.want {
				if got[day] != w {
					t.Fatalf("day %s = %+v, want %+v", day, got[day], w)
				}
			}
			if p := b.Pending(); len(p) != 0 {
				t.Fatalf("pending after flush: %+v", p)
			}
		})
	}
}

func TestFlushKeepsFailedDeltas(t *testing.T) {
	t.Parallel()
	db, c, _, b := setup(t, tally.Options{})
	ctx := context.Background()
	if err := b.ReportAdd(ctx, xjob.ReportDay{Day: "2027-01-15", RunningCount: 2}); err != nil {
		t.Fatal(err)
	}
	c.fail.Store(true)
	if err := b.Flush(ctx); err == nil {
		t.Fatal("flush during an outage reported no error")
	}
	// Counts that arrive meanwhile join the ones kept back.
	if err := b.ReportAdd(ctx, xjob.ReportDay{Day: "2027-01-15", RunningCount: -1, SucCount: 1}); err != nil {
		t.Fatal(err)
	}
	c.fail.Store(false)
	if err := b.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	want := xjob.ReportDay{Day: "2027-01-15", RunningCount: 1, SucCount: 1}
	if got := list(t, db)["2027-01-15"]; got != want {
		t.Fatalf("stored %+v, want %+v", got, want)
	}
}

// FlushDue is the end of a Lambda invocation: it writes nothing until the
// oldest pending delta is MaxAge old (younger deltas ride along), or
// MaxPending counters wait; a failed flush keeps the deltas as old as they
// were, so the next FlushDue retries them.
func TestFlushDueWaitsForAgeOrCount(t *testing.T) {
	t.Parallel()
	db, c, clk, b := setup(t, tally.Options{MaxAge: time.Minute, MaxPending: 3})
	ctx := context.Background()
	add := func(group int64, n int) {
		t.Helper()
		if err := b.ReportAdd(ctx, xjob.ReportDay{Day: "2027-01-15", GroupID: group, RunningCount: n}); err != nil {
			t.Fatal(err)
		}
	}
	flushDue := func(want bool) {
		t.Helper()
		did, err := b.FlushDue(ctx)
		if err != nil && !c.fail.Load() {
			t.Fatal(err)
		}
		if did != want {
			t.Fatalf("FlushDue at +%s flushed %v, want %v (pending %+v)", clk.Now().Sub(t0), did, want, b.Pending())
		}
	}
	flushDue(false) // nothing pending
	add(1, 1)
	if got := b.Oldest(); !got.Equal(t0) {
		t.Fatalf("oldest %v, want %v", got, t0)
	}
	clk.Advance(30 * time.Second)
	add(1, 1)
	add(2, 1)
	flushDue(false)
	clk.Advance(29999 * time.Millisecond)
	flushDue(false)
	if n := c.adds.Load(); n != 0 {
		t.Fatalf("%d writes before the oldest delta is a minute old", n)
	}
	clk.Advance(time.Millisecond)
	flushDue(true)
	if n := c.adds.Load(); n != 2 {
		t.Fatalf("%d writes at a minute, want 2 (one per group)", n)
	}
	if got := list(t, db)["2027-01-15"].RunningCount; got != 3 {
		t.Fatalf("running = %d, want 3", got)
	}
	if !b.Oldest().IsZero() {
		t.Fatalf("oldest %v after the flush, want none", b.Oldest())
	}

	// The count bound: a third group's counter makes it due at once.
	add(1, 1)
	add(2, 1)
	flushDue(false)
	add(3, 1)
	flushDue(true)
	if n := c.adds.Load(); n != 5 {
		t.Fatalf("%d writes, want 5", n)
	}

	// A failed flush keeps its deltas' age: the next invocation retries.
	add(1, 1)
	clk.Advance(time.Minute)
	c.fail.Store(true)
	flushDue(true)
	clk.Advance(time.Second)
	add(1, 1)
	if got := b.Oldest(); !got.Equal(clk.Now().Add(-61 * time.Second)) {
		t.Fatalf("oldest after a failed flush %v, want the failed delta's", got)
	}
	c.fail.Store(false)
	flushDue(true)
	if got := list(t, db)["2027-01-15"].RunningCount; got != 8 {
		t.Fatalf("running = %d, want 8", got)
	}
}

func TestRunFlushesEveryIntervalAndOnStop(t *testing.T) {
	t.Parallel()
	db, c, clk, b := setup(t, tally.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wait, stop := context.WithTimeout(context.Background(), 10*time.Second)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()

	add := func(n int) {
		t.Helper()
		if err := b.ReportAdd(ctx, xjob.ReportDay{Day: "2027-01-15", RunningCount: n}); err != nil {
			t.Fatal(err)
		}
	}
	add(1)
	add(1)
	if err := clk.WaitForSleepers(wait, 1); err != nil {
		t.Fatal(err)
	}
	clk.Advance(999 * time.Millisecond)
	if n := c.adds.Load(); n != 0 {
		t.Fatalf("flushed %d times before the interval", n)
	}
	clk.Advance(time.Millisecond)
	// The loop sleeps again only once its flush is done.
	if err := clk.WaitForSleepers(wait, 1); err != nil {
		t.Fatal(err)
	}
	if n := c.adds.Load(); n != 1 {
		t.Fatalf("%d writes after one interval, want 1", n)
	}
	if got := list(t, db)["2027-01-15"].RunningCount; got != 2 {
		t.Fatalf("running = %d, want 2", got)
	}
	add(5)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := list(t, db)["2027-01-15"].RunningCount; got != 7 {
		t.Fatalf("running after stop = %d, want 7 (the final flush)", got)
	}
}

func TestConcurrentAddsAreAllCounted(t *testing.T) {
	t.Parallel()
	db, _, _, b := setup(t, tally.Options{})
	ctx := context.Background()
	var wg sync.WaitGroup
	const workers, each = 8, 200
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				if err := b.ReportAdd(ctx, xjob.ReportDay{Day: "2027-01-15", RunningCount: 1}); err != nil {
					t.Error(err)
				}
				if (w+i)%50 == 0 {
					if err := b.Flush(ctx); err != nil {
						t.Error(err)
					}
				}
			}
		})
	}
	wg.Wait()
	if err := b.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got := list(t, db)["2027-01-15"].RunningCount; got != workers*each {
		t.Fatalf("running = %d, want %d", got, workers*each)
	}
}

func TestStoreBatchesOnlyReports(t *testing.T) {
	t.Parallel()
	db, c, _, b := setup(t, tally.Options{})
	ctx := context.Background()
	s := b.Store(db)
	if err := s.ReportAdd(ctx, xjob.ReportDay{Day: "2027-01-15", FailCount: 1}); err != nil {
		t.Fatal(err)
	}
	if n := c.adds.Load(); n != 0 {
		t.Fatalf("the wrapped store wrote through (%d writes)", n)
	}
	// Reading through the wrapped store sees its own counts.
	if got := list(t, s)["2027-01-15"].FailCount; got != 1 {
		t.Fatalf("fail = %d, want 1", got)
	}
	// Everything else reaches the store as it is.
	if _, err := s.JobGet(ctx, 42); !errors.Is(err, xjob.ErrNotFound) {
		t.Fatalf("JobGet through the wrapper = %v, want ErrNotFound", err)
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	t.Parallel()
	if _, err := tally.New(nil, tally.Options{}); err == nil {
		t.Fatal("nil store accepted")
	}
	db, _, _, _ := setup(t, tally.Options{})
	for _, o := range []tally.Options{{Interval: -time.Second}, {MaxAge: -time.Second}, {MaxPending: -1}} {
		if _, err := tally.New(db, o); err == nil {
			t.Fatalf("negative option accepted: %+v", o)
		}
	}
}

// The batched store gives back the store it wraps, so that the callback
// finds the SQLite store's LogJobs behind it.
func TestStoreUnwraps(t *testing.T) {
	t.Parallel()
	db, _, _, b := setup(t, tally.Options{})
	u, ok := b.Store(db).(interface{ Unwrap() driver.Store })
	if !ok || u.Unwrap() != driver.Store(db) {
		t.Fatalf("batched store unwraps: %v", ok)
	}
}
