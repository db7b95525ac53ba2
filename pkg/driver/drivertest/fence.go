package drivertest

import (
	"testing"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/pkg/driver"
)

// CallFenceStore is a LogStore whose claims can be marked as calling.
type CallFenceStore interface {
	driver.LogStore
	driver.CallFence
}

// ExerciseCallFence runs the CallFence contract: LogsCalling keeps only
// the logs still as their claim left them, bumps their versions, and
// leaves their claims to end at ClaimUntil as before.
func ExerciseCallFence[S CallFenceStore](t *testing.T, newStore func(t *testing.T) S) {
	t.Helper()
	t.Run("KeepsOnlyUnchangedClaims", func(t *testing.T) {
		t.Parallel()
		s, ctx := newStore(t), t.Context()
		created, err := s.LogCreateMany(ctx, []xjob.Log{
			sampleLog("fence/1", 1, 2, t0), sampleLog("fence/2", 2, 2, t0),
			sampleLog("fence/3", 3, 2, t0), sampleLog("fence/4", 4, 2, t0)})
		requireNoErr(t, err, "claim four logs")
		l1, l2, l3, l4 := created[0].Log, created[1].Log, created[2].Log, created[3].Log
		// l2 is claimed again since (another node's take-over), l3 is
		// triggered: neither may be called on the first claim.
		_, err = s.LogClaim(ctx, driver.LogClaimParams{ID: l2.ID, ExpectVersion: l2.Version, ClaimUntil: t0 + 60_000, TriggerTime: t0 + 30_000})
		requireNoErr(t, err, "take l2 over")
		requireNoErr(t, s.LogTriggered(ctx, driver.LogTriggeredParams{ID: l3.ID, TriggerCode: 200}), "trigger l3")

		// Given in any order, with an id that names no log.
		refs := []driver.LogRef{{ID: l4.ID, Version: l4.Version}, {ID: l2.ID, Version: l2.Version},
			{ID: l3.ID, Version: l3.Version}, {ID: 987654, Version: 1}, {ID: l1.ID, Version: l1.Version}}
		kept, err := s.LogsCalling(ctx, refs)
		requireNoErr(t, err, "LogsCalling")
		byID := map[int64]int64{}
		for _, k := range kept {
			byID[k.ID] = k.Version
		}
		if len(kept) != 2 || len(byID) != 2 || byID[l4.ID] == 0 || byID[l1.ID] == 0 {
			t.Fatalf("kept %+v, want l4 and l1 (ids %d, %d)", kept, l4.ID, l1.ID)
		}
		for _, l := range []xjob.Log{l4, l1} {
			got, err := s.LogGet(ctx, l.ID)
			requireNoErr(t, err, "get a kept log")
			if byID[l.ID] != got.Version || got.Version == l.Version {
				t.Fatalf("log %d: kept version %d, stored %d, claimed at %d: want the stored, new version", l.ID, byID[l.ID], got.Version, l.Version)
			}
			if got.ClaimUntil != l.ClaimUntil || got.Triggered() {
				t.Fatalf("log %d after LogsCalling: claim until %d, triggered %v; want the claim as it was", l.ID, got.ClaimUntil, got.Triggered())
			}
		}
		// Marked once: the claim's version is spent, a second mark keeps
		// nothing (a repeated call is not a second licence to call).
		again, err := s.LogsCalling(ctx, refs)
		requireNoErr(t, err, "LogsCalling again")
		if len(again) != 0 {
			t.Fatalf("LogsCalling on spent versions kept %+v, want none", again)
		}
		if none, err := s.LogsCalling(ctx, nil); err != nil || len(none) != 0 {
			t.Fatalf("LogsCalling(nil) = %+v, %v", none, err)
		}
	})
	t.Run("CallingClaimEndsAtClaimUntil", func(t *testing.T) {
		t.Parallel()
		s, ctx := newStore(t), t.Context()
		created, err := s.LogCreateMany(ctx, []xjob.Log{sampleLog("fence/5", 5, 2, t0)})
		requireNoErr(t, err, "claim")
		l := created[0].Log
		if _, err := s.LogsCalling(ctx, []driver.LogRef{{ID: l.ID, Version: l.Version}}); err != nil {
			t.Fatal(err)
		}
		held, err := s.LogCreateMany(ctx, []xjob.Log{sampleLog("fence/5", 5, 2, l.ClaimUntil-1)})
		requireNoErr(t, err, "deliver again within the claim")
		if held[0].Outcome != driver.ClaimHeld {
			t.Fatalf("a calling claim before its ClaimUntil: %v, want held", held[0].Outcome)
		}
		taken, err := s.LogCreateMany(ctx, []xjob.Log{sampleLog("fence/5", 5, 2, l.ClaimUntil)})
		requireNoErr(t, err, "deliver again at ClaimUntil")
		if taken[0].Outcome != driver.ClaimTakenOver {
			t.Fatalf("a calling claim at its ClaimUntil: %v, want taken over (its caller died)", taken[0].Outcome)
		}
	})
}
