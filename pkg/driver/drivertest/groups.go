package drivertest

import (
	"reflect"
	"testing"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/pkg/driver"
)

func sampleGroup(app, title string) xjob.Group {
	return xjob.Group{AppName: app, Title: title, AddressType: xjob.AddressManual,
		AddressList: []string{"http://10.0.0.1:9999", "http://10.0.0.2:9999"}, UpdatedAt: 1_700_000_000_000}
}

func normGroup(g xjob.Group) xjob.Group {
	if len(g.AddressList) == 0 {
		g.AddressList = nil
	}
	return g
}

func requireGroup(t *testing.T, what string, got, want xjob.Group) {
	t.Helper()
	if g, w := normGroup(got), normGroup(want); !reflect.DeepEqual(g, w) {
		t.Fatalf("%s:\n got  %+v\n want %+v", what, g, w)
	}
}

func groupID(g xjob.Group) int64 { return g.ID }

// ExerciseGroupStore runs the GroupStore contract against stores from newStore.
func ExerciseGroupStore(t *testing.T, newStore func(t *testing.T) driver.GroupStore) {
	t.Helper()

	t.Run("InsertGetNotFound", func(t *testing.T) {
		t.Parallel()
		s, ctx := newStore(t), t.Context()
		in := sampleGroup("xjob-demo", "Demo")
		g, err := s.GroupInsert(ctx, in)
		requireNoErr(t, err, "insert")
		if g.ID <= 0 || g.Version <= 0 {
			t.Fatalf("insert returned id %d version %d", g.ID, g.Version)
		}
		want := in
		want.ID, want.Version = g.ID, g.Version
		requireGroup(t, "insert result", g, want)
		got, err := s.GroupGet(ctx, g.ID)
		requireNoErr(t, err, "get")
		requireGroup(t, "get", got, want)
		h, err := s.GroupInsert(ctx, sampleGroup("other-app", "Other"))
		requireNoErr(t, err, "insert")
		if h.ID <= g.ID {
			t.Fatalf("second group id %d not above %d", h.ID, g.ID)
		}

		_, err = s.GroupGet(ctx, 424242)
		requireIs(t, err, xjob.ErrNotFound, "get missing")
		requireIs(t, s.GroupDelete(ctx, 424242), xjob.ErrNotFound, "delete missing")
		requireIs(t, s.GroupSetAddresses(ctx, 424242, nil, 1), xjob.ErrNotFound, "set addresses of missing")
		missing := in
		missing.ID = 424242
		_, err = s.GroupUpdate(ctx, driver.GroupUpdateParams{Group: missing, ExpectVersion: 1})
		requireMissing(t, err, "update missing")
	})

	t.Run("InsertWithID", func(t *testing.T) {
		t.Parallel()
		s, ctx := newStore(t), t.Context()
		in := sampleGroup("xjob-demo", "Demo")
		in.ID = 300
		g, err := s.GroupInsert(ctx, in)
		requireNoErr(t, err, "insert with id")
		if g.ID != 300 {
			t.Fatalf("insert with id 300 returned id %d", g.ID)
		}
		_, err = s.GroupInsert(ctx, in)
		requireIs(t, err, xjob.ErrConflict, "insert of a taken id")
		h, err := s.GroupInsert(ctx, sampleGroup("other-app", "Other"))
		requireNoErr(t, err, "insert after an explicit id")
		if h.ID <= 300 {
			t.Fatalf("an allocated id %d is not above the explicit id 300", h.ID)
		}
	})

	t.Run("UpdateConditional", func(t *testing.T) {
		t.Parallel()
		s, ctx := newStore(t), t.Context()
		g, err := s.GroupInsert(ctx, sampleGroup("xjob-demo", "Demo"))
		requireNoErr(t, err, "insert")
		edit := g
		edit.Title = "Edited"
		edit.AddressList = []string{"http://10.0.0.9:9999"}
		got, err := s.GroupUpdate(ctx, driver.GroupUpdateParams{Group: edit, ExpectVersion: g.Version})
		requireNoErr(t, err, "update")
		if got.Version <= g.Version {
			t.Fatalf("update kept version %d", got.Version)
		}
		want := edit
		want.Version = got.Version
		requireGroup(t, "update result", got, want)
		stale := edit
		stale.Title = "Lost"
		_, err = s.GroupUpdate(ctx, driver.GroupUpdateParams{Group: stale, ExpectVersion: g.Version})
		requireIs(t, err, xjob.ErrConflict, "update with stale version")
		read, err := s.GroupGet(ctx, g.ID)
		requireNoErr(t, err, "get")
		requireGroup(t, "after lost update", read, want)
	})

	t.Run("SetAddressesDelete", func(t *testing.T) {
		t.Parallel()
		s, ctx := newStore(t), t.Context()
		in := sampleGroup("auto-app", "Auto")
		in.AddressType, in.AddressList = xjob.AddressAuto, nil
		g, err := s.GroupInsert(ctx, in)
		requireNoErr(t, err, "insert")
		addrs := []string{"http://a:1", "http://b:2"}
		requireNoErr(t, s.GroupSetAddresses(ctx, g.ID, addrs, 1_700_000_100_000), "set addresses")
		got, err := s.GroupGet(ctx, g.ID)
		requireNoErr(t, err, "get")
		if !reflect.DeepEqual(got.AddressList, addrs) || got.UpdatedAt != 1_700_000_100_000 {
			t.Fatalf("after set addresses: %v at %d", got.AddressList, got.UpdatedAt)
		}
		requireNoErr(t, s.GroupSetAddresses(ctx, g.ID, nil, 1_700_000_200_000), "clear addresses")
		got, err = s.GroupGet(ctx, g.ID)
		requireNoErr(t, err, "get")
		if len(got.AddressList) != 0 {
			t.Fatalf("after clearing: %v", got.AddressList)
		}
		requireNoErr(t, s.GroupDelete(ctx, g.ID), "delete")
		_, err = s.GroupGet(ctx, g.ID)
		requireIs(t, err, xjob.ErrNotFound, "get deleted")
	})

	t.Run("List", func(t *testing.T) {
		t.Parallel()
		s, ctx := newStore(t), t.Context()
		var all []xjob.Group
		for _, a := range [][2]string{{"orders-app", "Orders"}, {"billing-app", "Billing team"}, {"orders-batch", "Batch team"}} {
			g, err := s.GroupInsert(ctx, sampleGroup(a[0], a[1]))
			requireNoErr(t, err, "insert")
			all = append(all, g)
		}
		cases := []struct {
			name string
			p    driver.GroupListParams
			want []int64
		}{
			{"all", driver.GroupListParams{}, ids(all, groupID)},
			{"app substring", driver.GroupListParams{AppName: "orders"}, []int64{all[0].ID, all[2].ID}},
			{"title substring", driver.GroupListParams{Title: "team"}, []int64{all[1].ID, all[2].ID}},
			{"both", driver.GroupListParams{AppName: "orders", Title: "team"}, []int64{all[2].ID}},
			{"none", driver.GroupListParams{AppName: "nothing"}, nil},
		}
		for _, c := range cases {
			got, err := s.GroupList(ctx, c.p)
			requireNoErr(t, err, c.name)
			requireIDs(t, c.name, ids(got, groupID), c.want)
		}
	})
}
