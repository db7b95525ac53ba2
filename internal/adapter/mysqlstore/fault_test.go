package mysqlstore

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/testenv/mariadb"
	"github.com/xjobdev/xjob/pkg/driver"
)

// A server restart fails the calls made while it is down, and the same
// *DB works again once it is back: the pool re-dials and re-prepares.
func TestServerRestart(t *testing.T) {
	t.Parallel()
	srv := mariadb.Start(t)
	db := openAt(t, srv.NewDatabase(t), Options{})
	ctx := t.Context()
	j, err := db.JobInsert(ctx, xjob.Job{GroupID: 1, TriggerStatus: xjob.StatusRunning, TriggerNextTime: 5})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.StopServer(); err != nil {
		t.Fatal(err)
	}
	if _, err := db.JobGet(ctx, j.ID); err == nil {
		t.Fatal("a read while the server is down succeeded")
	}
	if err := srv.StartServer(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := db.JobsDue(ctx, driver.JobsDueParams{Shard: j.Shard, Before: 10})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still failing after the restart: %v", err)
		}
		time.Sleep(50 * time.Millisecond) // the pool drops dead connections as it meets them
	}
	if err := db.JobAdvance(ctx, driver.JobAdvanceParams{ID: j.ID, ExpectVersion: 1, TriggerNextTime: 6}); err != nil {
		t.Fatalf("advance after the restart: %v", err)
	}
}

// Nodes claiming, recording and finishing overlapping buckets at once
// (the ring redelivering a bucket to another node while the first still
// works on it) end with exactly one winner per occurrence and per
// result, whatever deadlocks the server broke on the way.
func TestOverlappingBucketsUnderContention(t *testing.T) {
	t.Parallel()
	dsn := mariadb.Shared(t).NewDatabase(t)
	nodes := []*DB{openAt(t, dsn, Options{}), openAt(t, dsn, Options{}), openAt(t, dsn, Options{})}
	ctx := t.Context()
	const occurrences, workers = 300, 6
	type win struct{ created, finished int }
	wins := make([]win, workers)
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			db := nodes[w%len(nodes)]
			// Each worker takes the occurrences in its own order, in
			// chunks that overlap the others'.
			for start := 0; start < occurrences; start += 50 {
				var batch []xjob.Log
				for k := range 50 {
					i := (start + k + w*37) % occurrences
					batch = append(batch, xjob.Log{OccurrenceID: fmt.Sprintf("j%d/t1/s0", i), JobID: int64(i), GroupID: 1,
						TriggerType: xjob.TriggerCron, ScheduledTime: 1000, TriggerTime: 1000, ClaimUntil: 31_000})
				}
				res, err := db.LogCreateMany(ctx, batch)
				if err != nil {
					errs <- err
					return
				}
				var ids []int64
				var replies []driver.LogTriggeredParams
				var results []driver.LogFinishParams
				for _, r := range res {
					if r.Outcome == driver.ClaimCreated {
						wins[w].created++
						replies = append(replies, driver.LogTriggeredParams{ID: r.Log.ID, TriggerCode: 200})
					}
					ids = append(ids, r.Log.ID)
				}
				for i := len(ids) - 1; i >= 0; i-- { // results arrive in any order, for any log
					results = append(results, driver.LogFinishParams{ID: ids[i], HandleCode: 200 + w})
				}
				if len(replies) > 0 {
					if _, err := db.LogTriggeredMany(ctx, replies); err != nil {
						errs <- err
						return
					}
				}
				fin, err := db.LogFinishMany(ctx, results)
				if err != nil {
					errs <- err
					return
				}
				for _, f := range fin {
					if f.Err == nil {
						wins[w].finished++
					} else if !errors.Is(f.Err, xjob.ErrConflict) {
						errs <- f.Err
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	var created, finished int
	for _, w := range wins {
		created, finished = created+w.created, finished+w.finished
	}
	if created != occurrences || finished != occurrences {
		t.Fatalf("%d occurrences created and %d finished, want %d each", created, finished, occurrences)
	}
}
