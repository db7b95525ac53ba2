package dynamostore_test

import (
	"errors"
	"testing"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/adapter/dynamostore"
	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/pkg/driver"
)

// claimTTL is the claims' length in the provisional tests.
const claimTTL = 30_000

// provisionalClaim is the ring's provisional claim of job's occurrence at
// testNow, in delivery's name, made at at.
func provisionalClaim(job int64, delivery string, at int64) xjob.Log {
	occ := fire.Occurrence{JobID: job, Type: xjob.TriggerCron, FireTime: testNow}
	return xjob.Log{OccurrenceID: occ.ID(0), JobID: job, GroupID: 1, TriggerType: xjob.TriggerCron,
		ScheduledTime: testNow, TriggerTime: at, ClaimUntil: at + claimTTL, ExecutorAddress: "http://exec-" + delivery + "/",
		TriggerCode: xjob.CodeSuccess, TriggerMsg: "success by " + delivery, Delivery: delivery}
}

// The outcome table of provisional claims, against the page store: a
// provisional claim is kept with its delivery, answers to that delivery
// only, and a take-over by it records the new claim's address and
// message.
func TestProvisionalClaimOutcomes(t *testing.T) {
	t.Parallel()
	db := setup(t, dynamostore.Options{})
	ctx := t.Context()
	for job, c := range []struct {
		name     string
		delivery string
		at       int64
		want     driver.ClaimOutcome
	}{
		{"same delivery, claim valid", "m1", testNow + 1_000, driver.ClaimHeld},
		{"same delivery, claim expired", "m1", testNow + claimTTL, driver.ClaimTakenOver},
		{"another delivery, claim valid", "m2", testNow + 1_000, driver.ClaimTriggered},
		{"another delivery, claim expired", "m2", testNow + claimTTL, driver.ClaimTriggered},
		{"a plain delivery, claim expired", "", testNow + claimTTL, driver.ClaimTriggered},
	} {
		id := int64(100 + job)
		first, err := db.LogCreateMany(ctx, []xjob.Log{provisionalClaim(id, "m1", testNow)})
		if err != nil || first[0].Outcome != driver.ClaimCreated {
			t.Fatalf("%s: first claim %+v, %v", c.name, first, err)
		}
		stored, err := db.LogGet(ctx, first[0].Log.ID)
		if err != nil || !stored.Provisional() || stored.Delivery != "m1" || stored.ClaimUntil != testNow+claimTTL {
			t.Fatalf("%s: stored claim %+v, %v; want provisional in m1's name", c.name, stored, err)
		}
		again := provisionalClaim(id, c.delivery, c.at)
		if c.delivery == "" {
			again.TriggerCode, again.TriggerMsg = xjob.CodeNone, ""
		}
		res, err := db.LogCreateMany(ctx, []xjob.Log{again})
		if err != nil || res[0].Outcome != c.want {
			t.Fatalf("%s: outcome %+v, %v; want %v", c.name, res, err, c.want)
		}
		after, err := db.LogGet(ctx, first[0].Log.ID)
		if err != nil {
			t.Fatal(err)
		}
		if c.want != driver.ClaimTakenOver {
			if after.Version != stored.Version || after.Delivery != "m1" {
				t.Fatalf("%s: log changed to %+v", c.name, after)
			}
			continue
		}
		if res[0].Prev.ExecutorAddress != "http://exec-m1/" || after.ClaimUntil != c.at+claimTTL ||
			after.TriggerTime != c.at || !after.Provisional() || after.Version != stored.Version+1 {
			t.Fatalf("%s: taken over as %+v (prev %+v)", c.name, after, res[0].Prev)
		}
	}
}

// A reply record replaces a provisional claim's and ends it (a second
// reply conflicts); a result ends it too, after which the claim's own
// delivery drops the occurrence as well. A provisional log is running.
func TestProvisionalClaimEnds(t *testing.T) {
	t.Parallel()
	db := setup(t, dynamostore.Options{})
	ctx := t.Context()
	res, err := db.LogCreateMany(ctx, []xjob.Log{provisionalClaim(1, "m1", testNow), provisionalClaim(2, "m1", testNow)})
	if err != nil {
		t.Fatal(err)
	}
	failedID, finishedID := res[0].Log.ID, res[1].Log.ID

	running, err := db.LogsRunning(ctx, testNow, 10)
	if err != nil || len(running) != 2 {
		t.Fatalf("LogsRunning = %d logs, %v; want both provisional logs", len(running), err)
	}

	errs, err := db.LogTriggeredMany(ctx, []driver.LogTriggeredParams{{ID: failedID, ExecutorAddress: "http://exec-m1/",
		TriggerCode: xjob.CodeFail, TriggerMsg: "refused"}})
	if err != nil || errs[0] != nil {
		t.Fatalf("failure record over a provisional claim: %v, %v", errs, err)
	}
	l, err := db.LogGet(ctx, failedID)
	if err != nil || l.TriggerCode != xjob.CodeFail || l.TriggerMsg != "refused" || l.Delivery != "" || l.Provisional() {
		t.Fatalf("after the failure record: %+v, %v", l, err)
	}
	errs, err = db.LogTriggeredMany(ctx, []driver.LogTriggeredParams{{ID: failedID, TriggerCode: xjob.CodeSuccess, TriggerMsg: "late"}})
	if err != nil || !errors.Is(errs[0], xjob.ErrConflict) {
		t.Fatalf("second record: %v, %v; want a conflict", errs, err)
	}

	fin, err := db.LogFinishMany(ctx, []driver.LogFinishParams{{ID: finishedID, HandleTime: testNow + 5, HandleCode: xjob.CodeSuccess}})
	if err != nil || fin[0].Err != nil {
		t.Fatalf("result: %+v, %v", fin, err)
	}
	if l, err := db.LogGet(ctx, finishedID); err != nil || l.Delivery != "" || l.TriggerCode != xjob.CodeSuccess || l.TriggerMsg != "success by m1" {
		t.Fatalf("after the result: %+v, %v; want the claim's record kept, its delivery gone", l, err)
	}
	again, err := db.LogCreateMany(ctx, []xjob.Log{provisionalClaim(2, "m1", testNow+claimTTL)})
	if err != nil || again[0].Outcome != driver.ClaimTriggered {
		t.Fatalf("the claim's delivery after the result: %+v, %v; want ClaimTriggered", again, err)
	}
}
