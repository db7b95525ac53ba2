package driver_test

import (
	"testing"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/pkg/driver"
)

// The claim outcomes, provisional claims included: a provisional claim
// answers to its own delivery only; a plain claim to every delivery alike.
func TestClaimOutcomeOf(t *testing.T) {
	t.Parallel()
	const now, until = 1_000, 2_000
	plain := xjob.Log{ClaimUntil: until}
	prov := xjob.Log{ClaimUntil: until, Delivery: "m1", TriggerCode: xjob.CodeSuccess, TriggerMsg: "ok"}
	handled := prov
	handled.HandleCode = xjob.CodeSuccess
	failed := xjob.Log{ClaimUntil: until, TriggerCode: xjob.CodeFail}
	at := func(ms int64, delivery string) xjob.Log { return xjob.Log{TriggerTime: ms, Delivery: delivery} }
	for _, c := range []struct {
		name     string
		existing xjob.Log
		incoming xjob.Log
		want     driver.ClaimOutcome
	}{
		{"plain, valid, plain delivery", plain, at(now, ""), driver.ClaimHeld},
		{"plain, valid, named delivery", plain, at(now, "m1"), driver.ClaimHeld},
		{"plain, expired, plain delivery", plain, at(until, ""), driver.ClaimTakenOver},
		{"plain, expired, named delivery", plain, at(until, "m2"), driver.ClaimTakenOver},
		{"triggered", failed, at(until, "m1"), driver.ClaimTriggered},
		{"provisional, valid, same delivery", prov, at(now, "m1"), driver.ClaimHeld},
		{"provisional, expired, same delivery", prov, at(until, "m1"), driver.ClaimTakenOver},
		{"provisional, valid, other delivery", prov, at(now, "m2"), driver.ClaimTriggered},
		{"provisional, expired, other delivery", prov, at(until, "m2"), driver.ClaimTriggered},
		{"provisional, expired, plain delivery", prov, at(until, ""), driver.ClaimTriggered},
		{"result recorded, same delivery", handled, at(until, "m1"), driver.ClaimTriggered},
	} {
		if got := driver.ClaimOutcomeOf(c.existing, c.incoming); got != c.want {
			t.Errorf("%s: ClaimOutcomeOf = %v, want %v", c.name, got, c.want)
		}
	}
}

// A take-over carries the new claim's time, and its provisional record
// when it makes one; a plain take-over of a plain claim keeps the log's
// trigger fields (none) and address (the reply records the new one).
func TestTakeOver(t *testing.T) {
	t.Parallel()
	prev := xjob.Log{ID: 7, ClaimUntil: 100, TriggerTime: 70, ExecutorAddress: "http://a/", Delivery: "m1",
		TriggerCode: xjob.CodeSuccess, TriggerMsg: "was"}
	in := xjob.Log{ClaimUntil: 300, TriggerTime: 270, ExecutorAddress: "http://b/", Delivery: "m1",
		TriggerCode: xjob.CodeSuccess, TriggerMsg: "now"}
	got := driver.TakeOver(prev, in)
	if got.ID != 7 || got.ClaimUntil != 300 || got.TriggerTime != 270 || got.ExecutorAddress != "http://b/" ||
		got.TriggerMsg != "now" || got.Delivery != "m1" || !got.Provisional() {
		t.Fatalf("provisional take-over = %+v", got)
	}
	// The same delivery, now without an executor to call: a plain claim.
	in.TriggerCode, in.TriggerMsg, in.ExecutorAddress = xjob.CodeNone, "", ""
	if got := driver.TakeOver(prev, in); got.Provisional() || got.Triggered() || got.TriggerMsg != "" {
		t.Fatalf("plain take-over of a provisional claim = %+v; want untriggered", got)
	}
	plain := xjob.Log{ID: 8, ClaimUntil: 100, ExecutorAddress: "http://a/"}
	got = driver.TakeOver(plain, xjob.Log{ClaimUntil: 300, TriggerTime: 270, ExecutorAddress: "http://b/"})
	if got.ExecutorAddress != "http://a/" || got.Triggered() || got.ClaimUntil != 300 {
		t.Fatalf("plain take-over = %+v", got)
	}
}
