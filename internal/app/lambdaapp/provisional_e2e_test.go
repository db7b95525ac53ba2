package lambdaapp_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/adapter/awsconfig"
	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/pkg/driver"
)

// withID is the ring message m delivered under another SQS message id:
// for a bucket without an ID, another message carrying the same fires (a
// re-send, an admin push).
func withID(m events.SQSMessage, id string) events.SQSMessage {
	m.MessageId = id
	return m
}

// named is the ring message m with bucket ID id in its body, under SQS
// message id msgID.
func named(t *testing.T, m events.SQSMessage, id, msgID string) events.SQSMessage {
	t.Helper()
	var b fire.RingBucket
	if err := json.Unmarshal([]byte(m.Body), &b); err != nil {
		t.Fatal(err)
	}
	b.ID = id
	body, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	m.Body, m.MessageId = string(body), msgID
	return m
}

// The ring claims its fires provisionally: a successful call is recorded
// by the claim alone (the log holds code 200 in the ring message's name
// and no reply record follows). Another message carrying the same fires
// drops them; the same message delivered again after the claim expired,
// while the jobs still run, takes the claims over and asks the executor,
// which has the runs: nothing runs twice, and the take-over records what
// it found.
func TestRingProvisionalClaims(t *testing.T) {
	e := setupEnv(t)
	e.claimTTL = 2 * time.Second
	f := newRingFixture(t, e, 2)
	ctx := context.Background()
	for i, j := range f.jobs {
		j.Handler = "block" // runs until the test ends: no result clears the claim
		j, err := e.store.JobUpdate(ctx, driver.JobUpdateParams{Job: j, ExpectVersion: j.Version})
		if err != nil {
			t.Fatal(err)
		}
		f.jobs[i] = j
	}
	at := time.Now().Truncate(time.Second)
	m := f.bucket(at)
	f.fire(t, m)
	runs := f.runsOf()
	if len(runs) != 2 {
		t.Fatalf("executor ran %v, want both fires", runs)
	}
	var claimedUntil int64
	for id := range runs {
		l, err := e.store.LogGet(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if !l.Provisional() || l.Delivery != "sqs:"+m.MessageId || !strings.Contains(l.TriggerMsg, "code: 200") {
			t.Fatalf("log %d after a successful call: %+v; want the provisional claim in %s's name, unrecorded", id, l, m.MessageId)
		}
		claimedUntil = max(claimedUntil, l.ClaimUntil)
	}

	f.fire(t, withID(m, "another-message"))
	if again := f.runsOf(); len(again) != 2 || again[firstKey(runs)] != 1 {
		t.Fatalf("after another message with the same fires the executor ran %v", again)
	}
	if n := e.queueDepth(t, e.vars[awsconfig.EnvDispatchFastURL]); n != 0 {
		t.Fatalf("fast queue holds %d messages, want 0: another message's fires are dropped", n)
	}

	// The same message again once the claims expired (an SQS duplicate):
	// taken over, the executor asked, nothing sent again.
	time.Sleep(time.Until(time.UnixMilli(claimedUntil + 100)))
	f.fire(t, m)
	for id, n := range f.runsOf() {
		if n != 1 {
			t.Fatalf("log %d ran %d times after its message's redelivery", id, n)
		}
		l, err := e.store.LogGet(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if l.Delivery != "" || l.TriggerCode != xjob.CodeSuccess || !strings.Contains(l.TriggerMsg, "recovered") {
			t.Fatalf("log %d after the take-over: %+v; want the probe's finding recorded", id, l)
		}
	}
}

// A ring that died between its claims and its calls left provisional
// claims in its bucket's name: another bucket with the same fires drops
// them (the dead ring's message is still there), and that bucket's
// return, here from the dead-letter queue under a new SQS message id,
// takes them over once they expire and calls the executor: the fire is
// not lost, and runs once. A call that fails is recorded.
func TestRingProvisionalClaimOfADeadRing(t *testing.T) {
	e := setupEnv(t)
	e.claimTTL = 2 * time.Second
	f := newRingFixture(t, e, 1)
	ctx := context.Background()
	j := f.jobs[0]
	at := time.Now().Truncate(time.Second)
	occ := fire.Occurrence{JobID: j.ID, Type: xjob.TriggerCron, FireTime: at.UnixMilli()}
	dead := named(t, f.bucket(at), "bucket-dead", "sqs-1")
	res, err := e.store.LogCreateMany(ctx, []xjob.Log{{OccurrenceID: occ.ID(0), JobID: j.ID, GroupID: j.GroupID,
		TriggerType: xjob.TriggerCron, ScheduledTime: at.UnixMilli(), TriggerTime: at.UnixMilli(),
		ClaimUntil: time.Now().Add(e.claimTTL).UnixMilli(), ExecutorAddress: f.rec.srv.URL + "/",
		TriggerCode: xjob.CodeSuccess, TriggerMsg: "provisional", Delivery: "bucket-dead"}})
	if err != nil || res[0].Outcome != driver.ClaimCreated {
		t.Fatalf("the dead ring's claim: %+v, %v", res, err)
	}
	id := res[0].Log.ID

	f.fire(t, named(t, dead, "a-re-send", "sqs-2"))
	if runs := f.runsOf(); len(runs) != 0 {
		t.Fatalf("another message ran %v; want the fire left to the claim's message", runs)
	}
	if n := e.queueDepth(t, e.vars[awsconfig.EnvDispatchFastURL]); n != 0 {
		t.Fatalf("fast queue holds %d messages, want 0", n)
	}

	time.Sleep(time.Until(time.UnixMilli(res[0].Log.ClaimUntil).Add(100 * time.Millisecond)))
	f.fire(t, withID(dead, "sqs-from-the-dlq"))
	if runs := f.runsOf(); len(runs) != 1 || runs[id] != 1 {
		t.Fatalf("after the claim's message came back the executor ran %v, want log %d once", runs, id)
	}

	// A failed call: the reply is recorded over the provisional claim.
	g, err := e.store.GroupInsert(ctx, xjob.Group{AppName: "gone", Title: "gone", AddressType: xjob.AddressManual,
		AddressList: []string{"http://127.0.0.1:1/"}})
	if err != nil {
		t.Fatal(err)
	}
	j.GroupID = g.ID
	if _, err := e.store.JobUpdate(ctx, driver.JobUpdateParams{Job: j, ExpectVersion: j.Version}); err != nil {
		t.Fatal(err)
	}
	failAt := at.Add(time.Second)
	f.jobs[0], _ = e.store.JobGet(ctx, j.ID)
	f.fire(t, f.bucket(failAt))
	logs := e.logs(t, j.ID)
	var failed []xjob.Log
	for _, l := range logs {
		if l.ScheduledTime == failAt.UnixMilli() {
			failed = append(failed, l)
		}
	}
	if len(failed) != 1 || failed[0].TriggerCode != xjob.CodeFail || failed[0].Delivery != "" {
		t.Fatalf("failed call's log: %+v; want its failure recorded", failed)
	}
}

// firstKey is some key of m.
func firstKey(m map[int64]int) int64 {
	for k := range m {
		return k
	}
	return 0
}
