package drivertest

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/pkg/driver"
)

func sampleUser(name string, role xjob.Role, groups ...int64) xjob.User {
	return xjob.User{Username: name, PasswordHash: "$argon2id$v=19$m=8,t=1,p=1$c2FsdA$aGFzaA", Role: role,
		GroupIDs: groups, Locale: "zh-CN", CreatedAt: 1_700_000_000_000, UpdatedAt: 1_700_000_000_000}
}

func requireUser(t *testing.T, what string, got, want xjob.User) {
	t.Helper()
	if len(got.GroupIDs) == 0 {
		got.GroupIDs = nil
	}
	if len(want.GroupIDs) == 0 {
		want.GroupIDs = nil
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s:\n got  %+v\n want %+v", what, got, want)
	}
}

// ExerciseUserStore runs the UserStore contract against stores from newStore.
func ExerciseUserStore(t *testing.T, newStore func(t *testing.T) driver.UserStore) {
	t.Helper()

	t.Run("InsertGetConflict", func(t *testing.T) {
		t.Parallel()
		s, ctx := newStore(t), t.Context()
		in := sampleUser("alice", xjob.RoleNormal, 3, 1)
		u, err := s.UserInsert(ctx, in)
		requireNoErr(t, err, "insert")
		want := in
		want.Version = 1
		requireUser(t, "insert result", u, want)
		got, err := s.UserGet(ctx, "alice")
		requireNoErr(t, err, "get")
		requireUser(t, "get", got, want)

		dup := sampleUser("alice", xjob.RoleAdmin)
		dup.PasswordHash = "other"
		_, err = s.UserInsert(ctx, dup)
		requireIs(t, err, xjob.ErrConflict, "insert taken username")
		got, err = s.UserGet(ctx, "alice")
		requireNoErr(t, err, "get after conflict")
		requireUser(t, "a lost insert changes nothing", got, want)

		_, err = s.UserGet(ctx, "nobody")
		requireIs(t, err, xjob.ErrNotFound, "get missing")
		requireIs(t, s.UserDelete(ctx, "nobody"), xjob.ErrNotFound, "delete missing")
	})

	t.Run("ListFilters", func(t *testing.T) {
		t.Parallel()
		s, ctx := newStore(t), t.Context()
		for _, u := range []xjob.User{sampleUser("carol", xjob.RoleNormal), sampleUser("admin", xjob.RoleAdmin),
			sampleUser("bobby", xjob.RoleNormal, 7), sampleUser("carla", xjob.RoleAdmin)} {
			_, err := s.UserInsert(ctx, u)
			requireNoErr(t, err, "insert "+u.Username)
		}
		names := func(p driver.UserListParams) []string {
			us, err := s.UserList(ctx, p)
			requireNoErr(t, err, "list")
			out := []string{}
			for _, u := range us {
				out = append(out, u.Username)
			}
			return out
		}
		admin, normal := xjob.RoleAdmin, xjob.RoleNormal
		for _, tc := range []struct {
			p    driver.UserListParams
			want []string
		}{
			{driver.UserListParams{}, []string{"admin", "bobby", "carla", "carol"}},
			{driver.UserListParams{Username: "car"}, []string{"carla", "carol"}},
			{driver.UserListParams{Role: &admin}, []string{"admin", "carla"}},
			{driver.UserListParams{Role: &normal, Username: "o"}, []string{"bobby", "carol"}},
			{driver.UserListParams{Username: "zzz"}, []string{}},
		} {
			if got := names(tc.p); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("list %+v: got %v, want %v", tc.p, got, tc.want)
			}
		}
	})

	t.Run("UpdateVersionedDelete", func(t *testing.T) {
		t.Parallel()
		s, ctx := newStore(t), t.Context()
		u, err := s.UserInsert(ctx, sampleUser("dave", xjob.RoleNormal, 1))
		requireNoErr(t, err, "insert")
		n := u
		n.PasswordHash, n.Role, n.GroupIDs, n.Locale, n.UpdatedAt = "new-hash", xjob.RoleAdmin, []int64{2, 5}, "en", u.UpdatedAt+1
		got, err := s.UserUpdate(ctx, driver.UserUpdateParams{User: n, ExpectVersion: u.Version})
		requireNoErr(t, err, "update")
		want := n
		want.Version = u.Version + 1
		want.CreatedAt = u.CreatedAt
		requireUser(t, "update result", got, want)
		read, err := s.UserGet(ctx, "dave")
		requireNoErr(t, err, "get")
		requireUser(t, "get after update", read, want)

		_, err = s.UserUpdate(ctx, driver.UserUpdateParams{User: n, ExpectVersion: u.Version})
		requireIs(t, err, xjob.ErrConflict, "update with a stale version")
		ghost := sampleUser("ghost", xjob.RoleNormal)
		_, err = s.UserUpdate(ctx, driver.UserUpdateParams{User: ghost, ExpectVersion: 1})
		requireMissing(t, err, "update missing")

		// Two editors of one version: exactly one wins.
		errs := race(4, func(i int) error {
			m := want
			m.Locale = []string{"en", "zh-CN"}[i%2]
			_, err := s.UserUpdate(ctx, driver.UserUpdateParams{User: m, ExpectVersion: want.Version})
			return err
		})
		wins := 0
		for _, err := range errs {
			if err == nil {
				wins++
			} else {
				requireIs(t, err, xjob.ErrConflict, "racing update")
			}
		}
		if wins != 1 {
			t.Fatalf("%d racing updates of one version won, want 1", wins)
		}

		requireNoErr(t, s.UserDelete(ctx, "dave"), "delete")
		_, err = s.UserGet(ctx, "dave")
		requireIs(t, err, xjob.ErrNotFound, "get deleted")
	})
}

// ExerciseGlueStore runs the GlueStore contract against stores from newStore.
func ExerciseGlueStore(t *testing.T, newStore func(t *testing.T) driver.GlueStore) {
	t.Helper()

	t.Run("AddListKeepNewest", func(t *testing.T) {
		t.Parallel()
		s, ctx := newStore(t), t.Context()
		vs, err := s.GlueVersionList(ctx, 1, 30)
		requireNoErr(t, err, "list empty")
		if len(vs) != 0 {
			t.Fatalf("a job without saves lists %d versions", len(vs))
		}
		const keep = 3
		for i := range 5 {
			requireNoErr(t, s.GlueVersionAdd(ctx, xjob.GlueVersion{JobID: 1, GlueType: xjob.GlueShell,
				Source: fmt.Sprintf("echo %d", i), Remark: fmt.Sprintf("save %d", i), CreatedAt: int64(1000 + i)}, keep), "add")
		}
		requireNoErr(t, s.GlueVersionAdd(ctx, xjob.GlueVersion{JobID: 2, GlueType: xjob.GluePython,
			Source: "print(1)", Remark: "other job", CreatedAt: 5000}, keep), "add other job")
		vs, err = s.GlueVersionList(ctx, 1, 30)
		requireNoErr(t, err, "list")
		want := []xjob.GlueVersion{
			{JobID: 1, GlueType: xjob.GlueShell, Source: "echo 4", Remark: "save 4", CreatedAt: 1004},
			{JobID: 1, GlueType: xjob.GlueShell, Source: "echo 3", Remark: "save 3", CreatedAt: 1003},
			{JobID: 1, GlueType: xjob.GlueShell, Source: "echo 2", Remark: "save 2", CreatedAt: 1002},
		}
		if !reflect.DeepEqual(vs, want) {
			t.Fatalf("list keeps the newest %d, newest first:\n got  %+v\n want %+v", keep, vs, want)
		}
		vs, err = s.GlueVersionList(ctx, 1, 1)
		requireNoErr(t, err, "list limit 1")
		if len(vs) != 1 || vs[0].Source != "echo 4" {
			t.Fatalf("limit 1 listed %+v", vs)
		}
		requireNoErr(t, s.GlueVersionDeleteJob(ctx, 1), "delete job's versions")
		vs, err = s.GlueVersionList(ctx, 1, 30)
		requireNoErr(t, err, "list after delete")
		if len(vs) != 0 {
			t.Fatalf("deleted job still lists %d versions", len(vs))
		}
		vs, err = s.GlueVersionList(ctx, 2, 30)
		requireNoErr(t, err, "list other job")
		if len(vs) != 1 {
			t.Fatalf("another job's versions went with it: %+v", vs)
		}
	})
}
