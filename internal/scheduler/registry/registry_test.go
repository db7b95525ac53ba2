package registry

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/adapter/sqlitestore"
	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/driver"
	"github.com/xjobdev/xjob/pkg/protocol"
)

var start = time.Date(2026, 3, 10, 8, 30, 0, 0, time.UTC)

func registryParam(group, key, value string) protocol.RegistryParam {
	return protocol.RegistryParam{RegistryGroup: group, RegistryKey: key, RegistryValue: value}
}

type env struct {
	t   *testing.T
	ctx context.Context
	db  *sqlitestore.DB
	clk *clock.Fake
	svc *Service
}

func setup(t *testing.T, cfg Config) *env {
	t.Helper()
	ctx := context.Background()
	clk := clock.NewFake(start)
	db, err := sqlitestore.Open(ctx, filepath.Join(t.TempDir(), "xjob.db"), sqlitestore.Options{Shards: 2, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	cfg.Store, cfg.Clock = db, clk
	svc, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, ctx: ctx, db: db, clk: clk, svc: svc}
}

func (e *env) beat(app, addr string) {
	e.t.Helper()
	if err := e.svc.Register(e.ctx, registryParam(xjob.RegistryGroupExecutor, app, addr)); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) live(app string) []string {
	e.t.Helper()
	got, err := e.svc.LiveAddresses(e.ctx, app)
	if err != nil {
		e.t.Fatal(err)
	}
	return got
}

func TestRegisterRejectsBlankFields(t *testing.T) {
	t.Parallel()
	e := setup(t, Config{})
	tests := []struct {
		name  string
		p     protocol.RegistryParam
		field string
	}{
		{"blank group", registryParam("", "app-a", "http://a:9999/"), "registryGroup"},
		{"blank key", registryParam("EXECUTOR", " ", "http://a:9999/"), "registryKey"},
		{"blank value", registryParam("EXECUTOR", "app-a", ""), "registryValue"},
	}
	for _, tt := range tests {
		for op, call := range map[string]func(context.Context, protocol.RegistryParam) error{
			"register": e.svc.Register, "remove": e.svc.Remove,
		} {
			err := call(e.ctx, tt.p)
			var ve *xjob.ValidationError
			if !errors.Is(err, ErrIllegalArgument) || !errors.As(err, &ve) || ve.Problems[0].Field != tt.field {
				t.Errorf("%s %s: err = %v", op, tt.name, err)
			}
		}
	}
	all, err := e.db.RegistryList(e.ctx, driver.RegistryListParams{})
	if err != nil || len(all) != 0 {
		t.Fatalf("rejected heartbeats stored: %v, %v", all, err)
	}
}

func TestLiveAddresses(t *testing.T) {
	t.Parallel()
	e := setup(t, Config{})
	e.beat("app-a", "http://b:9999/")
	e.beat("app-b", "http://z:9999/")
	e.clk.Advance(60 * time.Second)
	e.beat("app-a", "http://a:9999/")
	if got, want := e.live("app-a"), []string{"http://a:9999/", "http://b:9999/"}; !slices.Equal(got, want) {
		t.Fatalf("live = %v, want %v (sorted, app-b excluded)", got, want)
	}
	e.clk.Advance(31 * time.Second) // b's beat is now 91 s old
	if got, want := e.live("app-a"), []string{"http://a:9999/"}; !slices.Equal(got, want) {
		t.Fatalf("live = %v, want %v", got, want)
	}
	e.beat("app-a", "http://b:9999/") // b comes back
	if got := e.live("app-a"); len(got) != 2 {
		t.Fatalf("live = %v after b beat again", got)
	}
	if err := e.svc.Remove(e.ctx, registryParam("EXECUTOR", "app-a", "http://a:9999/")); err != nil {
		t.Fatal(err)
	}
	if got, want := e.live("app-a"), []string{"http://b:9999/"}; !slices.Equal(got, want) {
		t.Fatalf("after remove live = %v, want %v", got, want)
	}
	if got := e.live("nobody"); len(got) != 0 {
		t.Fatalf("unknown app live = %v", got)
	}
}

// LiveSet is every app's live executors at once: what the lost-result
// check compares running logs against.
func TestLiveSet(t *testing.T) {
	t.Parallel()
	e := setup(t, Config{})
	e.beat("app-a", "http://gone:9999/")
	e.clk.Advance(60 * time.Second)
	e.beat("app-a", "http://a:9999/")
	e.beat("app-b", "http://b:9999/")
	e.clk.Advance(31 * time.Second) // gone's beat is now 91 s old
	got, err := e.svc.LiveSet(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"http://a:9999/": true, "http://b:9999/": true}
	if len(got) != len(want) || !got["http://a:9999/"] || !got["http://b:9999/"] {
		t.Fatalf("live set %v, want %v", got, want)
	}
}

func TestAddresses(t *testing.T) {
	t.Parallel()
	e := setup(t, Config{})
	e.beat("app-a", "http://b:9999/")
	e.beat("app-a", "http://a:9999/")
	manual := xjob.Group{AppName: "app-a", AddressType: xjob.AddressManual, AddressList: []string{"http://z:1/", "http://c:1/"}}
	got, err := e.svc.Addresses(e.ctx, manual)
	if err != nil || !slices.Equal(got, manual.AddressList) {
		t.Fatalf("manual = %v, %v; want the typed list in its order", got, err)
	}
	got[0] = "mutated"
	if manual.AddressList[0] != "http://z:1/" {
		t.Fatal("Addresses returned the group's own slice")
	}
	auto := xjob.Group{AppName: "app-a", AddressType: xjob.AddressAuto, AddressList: []string{"http://stale:1/"}}
	got, err = e.svc.Addresses(e.ctx, auto)
	if err != nil || !slices.Equal(got, []string{"http://a:9999/", "http://b:9999/"}) {
		t.Fatalf("auto = %v, %v; want the live executors", got, err)
	}
}

func TestRefreshGroups(t *testing.T) {
	t.Parallel()
	e := setup(t, Config{})
	insert := func(g xjob.Group) xjob.Group {
		g, err := e.db.GroupInsert(e.ctx, g)
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	auto := insert(xjob.Group{AppName: "app-a", Title: "A", AddressType: xjob.AddressAuto})
	empty := insert(xjob.Group{AppName: "app-e", Title: "E", AddressType: xjob.AddressAuto, AddressList: []string{"http://old:1/"}})
	manual := insert(xjob.Group{AppName: "app-a", Title: "M", AddressType: xjob.AddressManual, AddressList: []string{"http://m:1/"}})

	e.beat("app-a", "http://dead:9999/")
	e.clk.Advance(80 * time.Second)
	e.beat("app-a", "http://c:9999/")
	e.beat("app-a", "http://a:9999/")
	e.clk.Advance(20 * time.Second) // dead's beat is 100 s old

	res, err := e.svc.RefreshGroups(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Removed != 1 || res.Updated != 2 {
		t.Fatalf("result %+v, want 1 removed, 2 groups updated", res)
	}
	get := func(id int64) xjob.Group {
		g, err := e.db.GroupGet(e.ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	if g := get(auto.ID); !slices.Equal(g.AddressList, []string{"http://a:9999/", "http://c:9999/"}) || g.UpdatedAt != clock.Millis(e.clk) {
		t.Fatalf("auto group %+v", g)
	}
	if g := get(empty.ID); len(g.AddressList) != 0 {
		t.Fatalf("group without executors kept %v", g.AddressList)
	}
	if g := get(manual.ID); !slices.Equal(g.AddressList, []string{"http://m:1/"}) {
		t.Fatalf("manual group changed: %v", g.AddressList)
	}
	if all, _ := e.db.RegistryList(e.ctx, driver.RegistryListParams{}); len(all) != 2 {
		t.Fatalf("registry rows %v, want the 2 live ones", all)
	}
	res, err = e.svc.RefreshGroups(e.ctx)
	if err != nil || res != (RefreshResult{}) {
		t.Fatalf("second refresh %+v, %v; want nothing to do", res, err)
	}
}

func TestConfigDefaults(t *testing.T) {
	t.Parallel()
	e := setup(t, Config{})
	c := e.svc.Config()
	if c.DeadAfter != 90*time.Second {
		t.Fatalf("defaults %+v", c)
	}
}

// An app name holds at most MaxAddresses live executors: one more is
// refused, those registered keep beating, and a dead one's place is free
// again. Bad addresses are refused outright.
func TestRegisterCapAndAddressValidation(t *testing.T) {
	t.Parallel()
	e := setup(t, Config{MaxAddresses: 3})
	for i := range 3 {
		e.beat("capped-app", fmt.Sprintf("http://10.0.0.%d:9999/", i))
	}
	err := e.svc.Register(e.ctx, registryParam(xjob.RegistryGroupExecutor, "capped-app", "http://10.0.0.9:9999/"))
	if !errors.Is(err, ErrIllegalArgument) {
		t.Fatalf("fourth executor: %v", err)
	}
	e.beat("capped-app", "http://10.0.0.1:9999/") // a known one still beats
	e.beat("other-app", "http://10.0.0.9:9999/")  // the cap is per app name
	live, _ := e.svc.LiveAddresses(e.ctx, "capped-app")
	if len(live) != 3 {
		t.Fatalf("live = %v", live)
	}
	for _, bad := range []string{"ftp://10.0.0.5/", "file:///etc/passwd", "javascript:alert(1)",
		"http://10.0.0.5:9999/\x1b[2J", "http://u:p@10.0.0.5:9999/"} {
		if err := e.svc.Register(e.ctx, registryParam(xjob.RegistryGroupExecutor, "other-app", bad)); !errors.Is(err, ErrIllegalArgument) {
			t.Errorf("Register(%q) = %v, want ErrIllegalArgument", bad, err)
		}
	}
}

// An automatic group with no live executor reads 0 (an alert sees it); a
// manual one is not reported.
func TestOnlineCountsEmptyGroup(t *testing.T) {
	t.Parallel()
	e := setup(t, Config{})
	for _, g := range []xjob.Group{{AppName: "empty-app", Title: "e", AddressType: xjob.AddressAuto},
		{AppName: "busy-app", Title: "b", AddressType: xjob.AddressAuto},
		{AppName: "manual-app", Title: "m", AddressType: xjob.AddressManual, AddressList: []string{"http://10.0.0.1:9999"}}} {
		if _, err := e.db.GroupInsert(e.ctx, g); err != nil {
			t.Fatal(err)
		}
	}
	e.beat("busy-app", "http://10.0.0.2:9999")
	got, err := e.svc.OnlineCounts(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]int{"empty-app": 0, "busy-app": 1}; !reflect.DeepEqual(got, want) {
		t.Fatalf("OnlineCounts = %v, want %v", got, want)
	}
}
