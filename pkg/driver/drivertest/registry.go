package drivertest

import (
	"cmp"
	"reflect"
	"slices"
	"testing"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/pkg/driver"
)

func sortEntries(es []xjob.RegistryEntry) []xjob.RegistryEntry {
	slices.SortFunc(es, func(a, b xjob.RegistryEntry) int {
		return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Key, b.Key), cmp.Compare(a.Value, b.Value))
	})
	if len(es) == 0 {
		return nil
	}
	return es
}

func requireEntries(t *testing.T, what string, got, want []xjob.RegistryEntry) {
	t.Helper()
	if g, w := sortEntries(slices.Clone(got)), sortEntries(slices.Clone(want)); !reflect.DeepEqual(g, w) {
		t.Fatalf("%s:\n got  %+v\n want %+v", what, g, w)
	}
}

// ExerciseRegistryStore runs the RegistryStore contract against stores from newStore.
func ExerciseRegistryStore(t *testing.T, newStore func(t *testing.T) driver.RegistryStore) {
	t.Helper()

	t.Run("UpsertListRemove", func(t *testing.T) {
		t.Parallel()
		s, ctx := newStore(t), t.Context()
		ex := xjob.RegistryGroupExecutor
		a1 := xjob.RegistryEntry{Group: ex, Key: "app-a", Value: "http://a1:9999", UpdatedAt: t0}
		a2 := xjob.RegistryEntry{Group: ex, Key: "app-a", Value: "http://a2:9999", UpdatedAt: t0 + 10_000}
		b1 := xjob.RegistryEntry{Group: ex, Key: "app-b", Value: "http://a1:9999", UpdatedAt: t0 + 20_000}
		for _, e := range []xjob.RegistryEntry{a1, a2, b1} {
			requireNoErr(t, s.RegistryUpsert(ctx, e), "upsert")
		}
		list := func(key string, since int64) []xjob.RegistryEntry {
			t.Helper()
			got, err := s.RegistryList(ctx, driver.RegistryListParams{Key: key, Since: since})
			requireNoErr(t, err, "list")
			return got
		}
		requireEntries(t, "all keys", list("", 0), []xjob.RegistryEntry{a1, a2, b1})
		requireEntries(t, "one key", list("app-a", 0), []xjob.RegistryEntry{a1, a2})
		requireEntries(t, "since is inclusive", list("app-a", t0+10_000), []xjob.RegistryEntry{a2})
		requireEntries(t, "since, all keys", list("", t0+10_001), []xjob.RegistryEntry{b1})
		requireEntries(t, "unknown key", list("app-z", 0), nil)

		// A heartbeat refreshes the entry instead of adding one.
		a1.UpdatedAt = t0 + 30_000
		requireNoErr(t, s.RegistryUpsert(ctx, a1), "refresh")
		requireEntries(t, "after refresh", list("app-a", 0), []xjob.RegistryEntry{a1, a2})
		requireEntries(t, "refreshed entry is recent", list("app-a", t0+25_000), []xjob.RegistryEntry{a1})

		requireNoErr(t, s.RegistryRemove(ctx, a2), "remove")
		requireEntries(t, "after remove", list("", 0), []xjob.RegistryEntry{a1, b1})
		requireNoErr(t, s.RegistryRemove(ctx, a2), "remove missing")
	})

	t.Run("DeleteBefore", func(t *testing.T) {
		t.Parallel()
		s, ctx := newStore(t), t.Context()
		var keep []xjob.RegistryEntry
		for i := range 6 {
			e := xjob.RegistryEntry{Group: xjob.RegistryGroupExecutor, Key: "app", Value: "http://h" + string(rune('a'+i)) + ":1", UpdatedAt: t0 + int64(i)*1000}
			requireNoErr(t, s.RegistryUpsert(ctx, e), "upsert")
			if i >= 4 {
				keep = append(keep, e)
			}
		}
		n, err := s.RegistryDeleteBefore(ctx, t0+4000)
		requireNoErr(t, err, "delete before")
		if n != 4 {
			t.Fatalf("deleted %d entries, want 4", n)
		}
		got, err := s.RegistryList(ctx, driver.RegistryListParams{})
		requireNoErr(t, err, "list")
		requireEntries(t, "left after delete", got, keep)
	})
}

// ExerciseReportStore runs the ReportStore contract against stores from newStore.
func ExerciseReportStore(t *testing.T, newStore func(t *testing.T) driver.ReportStore) {
	t.Helper()
	t.Run("AddList", func(t *testing.T) {
		t.Parallel()
		s, ctx := newStore(t), t.Context()
		adds := []xjob.ReportDay{
			{Day: "2024-02-28", SucCount: 1},
			{Day: "2024-02-29", RunningCount: 2, SucCount: 3, FailCount: 1},
			{Day: "2024-02-29", RunningCount: -1, SucCount: 2},
			{Day: "2024-03-01", FailCount: 4},
			{Day: "2024-03-02", SucCount: 9},
		}
		for _, d := range adds {
			requireNoErr(t, s.ReportAdd(ctx, d), "add")
		}
		got, err := s.ReportList(ctx, driver.ReportListParams{From: "2024-02-29", To: "2024-03-01"})
		requireNoErr(t, err, "list")
		slices.SortFunc(got, func(a, b xjob.ReportDay) int { return cmp.Compare(a.Day, b.Day) })
		want := []xjob.ReportDay{
			{Day: "2024-02-29", RunningCount: 1, SucCount: 5, FailCount: 1},
			{Day: "2024-03-01", FailCount: 4},
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("report:\n got  %+v\n want %+v", got, want)
		}
		none, err := s.ReportList(ctx, driver.ReportListParams{From: "2023-01-01", To: "2023-12-31"})
		requireNoErr(t, err, "list empty range")
		if len(none) != 0 {
			t.Fatalf("empty range returned %+v", none)
		}
	})
}

// ExerciseReportGroups runs the per-group part of the ReportStore
// contract: counters kept per day and group, summed per day over every
// group (group 0 included) or over a set of groups (group 0 never).
func ExerciseReportGroups(t *testing.T, newStore func(t *testing.T) driver.ReportStore) {
	t.Helper()
	t.Run("SumsGroups", func(t *testing.T) {
		t.Parallel()
		s, ctx := newStore(t), t.Context()
		adds := []xjob.ReportDay{
			{Day: "2024-02-29", SucCount: 1},                 // no one group
			{Day: "2024-02-29", GroupID: 7, RunningCount: 2}, // group 7
			{Day: "2024-02-29", GroupID: 7, RunningCount: -1, SucCount: 1},
			{Day: "2024-02-29", GroupID: 8, FailCount: 3},
			{Day: "2024-03-01", GroupID: 8, SucCount: 4},
			{Day: "2024-03-01", GroupID: 12, FailCount: 5},
			{Day: "2024-03-02", GroupID: 7, SucCount: 9}, // out of range
		}
		for _, d := range adds {
			requireNoErr(t, s.ReportAdd(ctx, d), "add")
		}
		from, to := "2024-02-29", "2024-03-01"
		cases := []struct {
			name   string
			groups []int64
			want   []xjob.ReportDay
		}{
			{"every group", nil, []xjob.ReportDay{
				{Day: "2024-02-29", RunningCount: 1, SucCount: 2, FailCount: 3},
				{Day: "2024-03-01", SucCount: 4, FailCount: 5},
			}},
			{"group 7", []int64{7}, []xjob.ReportDay{{Day: "2024-02-29", RunningCount: 1, SucCount: 1}}},
			{"groups 7 and 8", []int64{8, 7}, []xjob.ReportDay{
				{Day: "2024-02-29", RunningCount: 1, SucCount: 1, FailCount: 3},
				{Day: "2024-03-01", SucCount: 4},
			}},
			{"group 0 is no group", []int64{0}, nil},
			{"a group without counts", []int64{99}, nil},
			{"repeated groups count once", []int64{12, 12}, []xjob.ReportDay{{Day: "2024-03-01", FailCount: 5}}},
		}
		for _, c := range cases {
			got, err := s.ReportList(ctx, driver.ReportListParams{From: from, To: to, GroupIDs: c.groups})
			requireNoErr(t, err, "list "+c.name)
			if len(got) == 0 {
				got = nil
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("report %s:\n got  %+v\n want %+v", c.name, got, c.want)
			}
		}
		// Longer ranges over the same counters (a store may read them
		// another way: key by key, or in one sweep).
		long := []xjob.ReportDay{
			{Day: "2024-02-29", RunningCount: 1, SucCount: 1, FailCount: 3},
			{Day: "2024-03-01", SucCount: 4},
			{Day: "2024-03-02", SucCount: 9},
		}
		for _, r := range []driver.ReportListParams{
			{From: "2024-01-15", To: "2024-03-14", GroupIDs: []int64{7, 8}},
			{From: "2000-01-01", To: "2099-12-31", GroupIDs: []int64{7, 8}},
			{From: "2000-01-01", To: "2099-12-31", GroupIDs: []int64{7, 8, 20, 21, 22, 23, 24, 25, 26, 27}},
		} {
			got, err := s.ReportList(ctx, r)
			requireNoErr(t, err, "list long range")
			if !reflect.DeepEqual(got, long) {
				t.Errorf("report %+v:\n got  %+v\n want %+v", r, got, long)
			}
		}
	})
}
