package adminapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/scheduler/callback"
	"github.com/xjobdev/xjob/internal/web/adminapi"
	"github.com/xjobdev/xjob/internal/web/auth"
	"github.com/xjobdev/xjob/pkg/clock"
)

// TestReportOfUsersGroups: GET /v1/report gives a normal user its groups'
// report counters only, not the installation's.
func TestReportOfUsersGroups(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ss := newServices(t)
	db, clk, svc := ss.db, ss.clk, ss.svc
	au, err := auth.New(auth.Config{Users: db, AdminToken: adminToken + "-long-enough", Key: auth.DeriveKey(adminToken),
		Params: auth.TestParams, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	h, err := adminapi.New(adminapi.Config{Admin: svc, Registry: ss.reg, Callback: ss.cb, AdminToken: adminToken + "-long-enough",
		AccessToken: accessToken, Auth: au, Logger: ss.quiet, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	mine, _ := svc.CreateGroup(ctx, xjob.Group{AppName: "mine-app", Title: "Mine", AddressType: xjob.AddressManual,
		AddressList: []string{"http://127.0.0.1:1"}})
	theirs, _ := svc.CreateGroup(ctx, xjob.Group{AppName: "their-app", Title: "Theirs", AddressType: xjob.AddressManual,
		AddressList: []string{"http://127.0.0.1:1"}})
	// Mine: one success and one failure; theirs: two failures. Each log
	// is counted as dispatch (its trigger) and the callback (its result)
	// count it.
	for i, l := range []struct {
		group         int64
		trigger, hand int
	}{{mine.ID, 200, 200}, {mine.ID, 500, 0}, {theirs.ID, 500, 0}, {theirs.ID, 200, 500}} {
		log := xjob.Log{OccurrenceID: "r/" + itoa(int64(i)), JobID: 100 + l.group, GroupID: l.group,
			TriggerType: xjob.TriggerManual, TriggerTime: clock.Millis(clk), TriggerCode: l.trigger, HandleCode: l.hand}
		if _, err := db.LogCreate(ctx, log); err != nil {
			t.Fatal(err)
		}
		trigger := xjob.ReportDay{Day: callback.Day(log.TriggerTime), GroupID: log.GroupID, RunningCount: 1}
		if l.trigger != xjob.CodeSuccess {
			trigger.RunningCount, trigger.FailCount = 0, 1
		}
		for _, d := range []xjob.ReportDay{trigger, callback.FinishDelta(log)} {
			if err := db.ReportAdd(ctx, d); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := au.CreateUser(ctx, auth.Principal{Token: true}, auth.UserInput{Username: "normal", Password: "normal-password",
		GroupIDs: []int64{mine.ID}}); err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	if _, err := au.SignIn(rec, httptest.NewRequest("POST", "/login", nil), "normal", "normal-password"); err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest("GET", "/v1/report", nil)
	req.AddCookie(rec.Result().Cookies()[0])
	res := httptest.NewRecorder()
	h.ServeHTTP(res, req)
	if res.Code != http.StatusOK {
		t.Fatalf("report: %d %s", res.Code, res.Body)
	}
	var out struct{ Items []xjob.ReportDay }
	if err := json.Unmarshal(res.Body.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	var suc, fail int
	for _, d := range out.Items {
		suc, fail = suc+d.SucCount, fail+d.FailCount
	}
	if len(out.Items) != 7 || suc != 1 || fail != 1 {
		t.Fatalf("normal user's report: %d days, %d successes, %d failures; want 7, 1, 1 (its group only): %+v",
			len(out.Items), suc, fail, out.Items)
	}
}
