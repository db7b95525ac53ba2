package dynamostore_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/xjobdev/xjob/internal/adapter/dynamostore"
	"github.com/xjobdev/xjob/internal/scheduler/lease"
	"github.com/xjobdev/xjob/pkg/driver"
)

// A misfire episode's lease carries the leases table's TTL attribute,
// MisfireKeep after its expiry, so a job that misfired once leaves no item
// behind for good; a shard lease, whose token must keep growing, carries
// none. Once TTL has deleted it, the lease answers the fires that can
// still arrive (at or after its expiry) as the expired item did.
func TestMisfireLeasePurge(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := setup(t, dynamostore.Options{})
	const now = int64(testNow)
	purgeAt := func(name string) (int64, bool) {
		t.Helper()
		it, err := dynamostore.LeaseItem(ctx, db, name)
		if err != nil {
			t.Fatal(err)
		}
		v, ok := it[dynamostore.AttrPurgeAt].(*types.AttributeValueMemberN)
		if !ok {
			return 0, false
		}
		n, err := strconv.ParseInt(v.Value, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return n, true
	}
	keep := lease.MisfireKeep.Milliseconds()

	// Jobs 1 and 2 miss the same fires; job 2 is deleted, its lease left
	// to TTL.
	at, overdue := now-40_000, now-30_000
	for _, job := range []int64{1, 2} {
		ep, err := lease.MisfireEpisode(ctx, db, job, at, overdue)
		if err != nil || ep != (lease.Episode{Key: at, Expires: overdue + 1}) {
			t.Fatalf("job %d: episode %+v, %v; want key %d expiring %d", job, ep, err, at, overdue+1)
		}
		if got, ok := purgeAt(lease.MisfireName(job)); !ok || got != (overdue+1+keep)/1000+1 {
			t.Fatalf("job %d: purgeAt %d (%v), want the expiry + MisfireKeep in seconds, %d", job, got, ok, (overdue+1+keep)/1000+1)
		}
	}
	// A later fire of the same episode, seen later, joins it and moves the
	// purge with the expiry it extends to.
	if ep, err := lease.MisfireEpisode(ctx, db, 1, at, overdue+5_000); err != nil || ep.Key != at {
		t.Fatalf("same episode again: %+v, %v", ep, err)
	}
	if got, _ := purgeAt(lease.MisfireName(1)); got != (overdue+5_001+keep)/1000+1 {
		t.Fatalf("purgeAt after the extension %d, want %d", got, (overdue+5_001+keep)/1000+1)
	}
	if ep, err := lease.MisfireEpisode(ctx, db, 2, at, overdue+5_000); err != nil || ep.Key != at {
		t.Fatalf("job 2, same episode again: %+v, %v", ep, err)
	}

	// A shard lease carries no TTL attribute.
	if _, err := db.LeaseAcquire(ctx, driver.LeaseAcquireParams{Name: lease.Name(0), Owner: "scan", Now: now, TTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if got, ok := purgeAt(lease.Name(0)); ok {
		t.Fatalf("shard lease purgeAt %d: TTL would reset its token", got)
	}

	// TTL deletes job 2's item; a fire at or after the expiry (every fire
	// that can still arrive) gets the same episode from the missing item as
	// job 1's from the expired one: its own.
	if err := dynamostore.ExpireLeaseItem(ctx, db, lease.MisfireName(2)); err != nil {
		t.Fatal(err)
	}
	later, laterOverdue := overdue+5_001, now+lease.MisfireKeep.Milliseconds()
	kept, err := lease.MisfireEpisode(ctx, db, 1, later, laterOverdue)
	if err != nil {
		t.Fatal(err)
	}
	gone, err := lease.MisfireEpisode(ctx, db, 2, later, laterOverdue)
	if err != nil {
		t.Fatal(err)
	}
	if kept != gone || kept.Key != later {
		t.Fatalf("after the purge: job 1 (item expired) %+v, job 2 (item deleted) %+v; want both a new episode keyed %d", kept, gone, later)
	}
}
