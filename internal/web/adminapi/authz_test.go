package adminapi_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/admin"
	"github.com/xjobdev/xjob/internal/web/adminapi"
	"github.com/xjobdev/xjob/internal/web/auth"
	"github.com/xjobdev/xjob/pkg/clock"
)

// TestSessionPermissions drives /v1 as a normal user with a session
// cookie: only its groups, CSRF on writes, nothing admin-only.
func TestSessionPermissions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ss := newServices(t)
	db, clk, svc, quiet := ss.db, ss.clk, ss.svc, ss.quiet
	au, err := auth.New(auth.Config{Users: db, AdminToken: adminToken + "-long-enough", Key: auth.DeriveKey(adminToken),
		Params: auth.TestParams, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	h, err := adminapi.New(adminapi.Config{Admin: svc, Registry: ss.reg, Callback: ss.cb, AdminToken: adminToken + "-long-enough",
		AccessToken: accessToken, Auth: au, Logger: quiet, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)

	mine, _ := svc.CreateGroup(ctx, xjob.Group{AppName: "mine-app", Title: "Mine", AddressType: xjob.AddressManual, AddressList: []string{"http://127.0.0.1:1"}})
	theirs, _ := svc.CreateGroup(ctx, xjob.Group{AppName: "their-app", Title: "Theirs", AddressType: xjob.AddressManual, AddressList: []string{"http://127.0.0.1:1"}})
	job := func(g int64) xjob.Job {
		j, err := svc.CreateJob(ctx, xjob.Job{GroupID: g, Description: "j", Author: "a", ScheduleType: xjob.ScheduleCron,
			ScheduleConf: "0 0 0 * * ?", GlueType: xjob.GlueBean, Handler: "demo"})
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
	myJob, theirJob := job(mine.ID), job(theirs.ID)
	root := auth.Principal{Token: true}
	if _, err := au.CreateUser(ctx, root, auth.UserInput{Username: "normal", Password: "normal-password", GroupIDs: []int64{mine.ID}}); err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	p, err := au.SignIn(rec, httptest.NewRequest("POST", "/login", nil), "normal", "normal-password")
	if err != nil {
		t.Fatal(err)
	}
	cookie := rec.Result().Cookies()[0]
	csrf := au.CSRFToken(p)

	call := func(method, path, body string, withCSRF bool) int {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		req.AddCookie(cookie)
		req.Header.Set("Content-Type", "application/json")
		if withCSRF {
			req.Header.Set(auth.CSRFHeader, csrf)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		_ = res.Body.Close()
		return res.StatusCode
	}
	id := itoa
	var seeded []xjob.Log // one log per group: the clear may take only mine's
	for i, j := range []xjob.Job{myJob, theirJob} {
		l, err := db.LogCreate(ctx, xjob.Log{OccurrenceID: "seed/" + itoa(int64(i)), JobID: j.ID, GroupID: j.GroupID,
			TriggerType: xjob.TriggerManual, TriggerTime: clock.Millis(clk)})
		if err != nil {
			t.Fatal(err)
		}
		seeded = append(seeded, l)
	}
	jobBody := func(g int64, children string) string {
		return `{"jobGroup":` + itoa(g) + `,"jobDesc":"n","author":"a","scheduleType":"CRON","scheduleConf":"0 0 0 * * ?",` +
			`"glueType":"BEAN","executorHandler":"demo","childJobIds":[` + children + `]}`
	}
	for _, tc := range []struct {
		name, method, path, body string
		csrf                     bool
		want                     int
	}{
		{"own job", "GET", "/v1/jobs/" + id(myJob.ID), "", false, 200},
		{"other group's job", "GET", "/v1/jobs/" + id(theirJob.ID), "", false, 403},
		{"trigger other group's job", "POST", "/v1/jobs/" + id(theirJob.ID) + "/trigger", "{}", true, 403},
		{"list without a group", "GET", "/v1/jobs", "", false, 403},
		{"list own group", "GET", "/v1/jobs?group=" + id(mine.ID), "", false, 200},
		{"list other group", "GET", "/v1/jobs?group=" + id(theirs.ID), "", false, 403},
		{"logs of other group's job", "GET", "/v1/logs?job=" + id(theirJob.ID), "", false, 403},
		{"logs of own group", "GET", "/v1/logs?group=" + id(mine.ID), "", false, 200},
		{"other group's executors", "GET", "/v1/groups/" + id(theirs.ID) + "/executors", "", false, 403},
		{"start own job without CSRF", "POST", "/v1/jobs/" + id(myJob.ID) + "/start", "{}", false, 403},
		{"start own job", "POST", "/v1/jobs/" + id(myJob.ID) + "/start", "{}", true, 200},
		{"create in other group", "POST", "/v1/jobs", jobBody(theirs.ID, ""), true, 403},
		{"create with other group's child", "POST", "/v1/jobs", jobBody(mine.ID, id(theirJob.ID)), true, 403},
		{"move own job to other group", "PUT", "/v1/jobs/" + id(myJob.ID), jobBody(theirs.ID, ""), true, 403},
		{"create in own group", "POST", "/v1/jobs", jobBody(mine.ID, id(myJob.ID)), true, 201},
		{"create group", "POST", "/v1/groups", `{"appname":"new-app","title":"x","addressType":0}`, true, 403},
		{"users", "GET", "/v1/users", "", false, 403},
		{"metrics", "GET", "/v1/metrics", "", false, 403},
		{"me", "GET", "/v1/me", "", false, 200},
		{"cron preview", "GET", "/v1/cron/next?expr=0+0+0+*+*+%3F", "", false, 200},
		{"clear every group's logs", "DELETE", "/v1/logs?mode=all", "", true, 403},
		{"clear other group's logs", "DELETE", "/v1/logs?group=" + id(theirs.ID) + "&mode=all", "", true, 403},
		{"clear other group's job's logs", "DELETE", "/v1/logs?job=" + id(theirJob.ID) + "&mode=all", "", true, 403},
		{"clear own logs without CSRF", "DELETE", "/v1/logs?group=" + id(mine.ID) + "&mode=all", "", false, 403},
		{"clear own logs, unknown mode", "DELETE", "/v1/logs?group=" + id(mine.ID) + "&mode=2m", "", true, 400},
		{"clear own logs", "DELETE", "/v1/logs?group=" + id(mine.ID) + "&mode=all", "", true, 200},
		// GLUE jobs are an admin's to create and edit (auth.GlueAdmins, the default).
		{"create GLUE job in own group", "POST", "/v1/jobs", strings.Replace(jobBody(mine.ID, ""), `"glueType":"BEAN"`,
			`"glueType":"GLUE_SHELL","glueSource":"id"`, 1), true, 403},
		{"turn own job into GLUE", "PUT", "/v1/jobs/" + id(myJob.ID), strings.Replace(jobBody(mine.ID, ""), `"glueType":"BEAN"`,
			`"glueType":"GLUE_SHELL","glueSource":"id"`, 1), true, 403},
		// Guesses of the current password are limited like sign-ins.
		{"wrong current password 1", "POST", "/v1/me/password", `{"current":"guess-guess","new":"new-password-1"}`, true, 400},
		{"wrong current password 2", "POST", "/v1/me/password", `{"current":"guess-guess","new":"new-password-1"}`, true, 400},
		{"wrong current password 3", "POST", "/v1/me/password", `{"current":"guess-guess","new":"new-password-1"}`, true, 400},
		{"wrong current password 4", "POST", "/v1/me/password", `{"current":"guess-guess","new":"new-password-1"}`, true, 400},
		{"wrong current password 5", "POST", "/v1/me/password", `{"current":"guess-guess","new":"new-password-1"}`, true, 400},
		{"right current password past the limit", "POST", "/v1/me/password", `{"current":"normal-password","new":"new-password-1"}`, true, 429},
	} {
		if got := call(tc.method, tc.path, tc.body, tc.csrf); got != tc.want {
			t.Errorf("%s: %s %s = %d, want %d", tc.name, tc.method, tc.path, got, tc.want)
		}
	}
	// The group list shows only the user's groups.
	req, _ := http.NewRequest("GET", srv.URL+"/v1/groups", nil)
	req.AddCookie(cookie)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	_ = res.Body.Close()
	if !strings.Contains(string(b), "mine-app") || strings.Contains(string(b), "their-app") {
		t.Fatalf("group list for a normal user: %s", b)
	}
	if _, err := db.LogGet(ctx, seeded[0].ID); err == nil {
		t.Errorf("own group's log survived the clear")
	}
	if _, err := db.LogGet(ctx, seeded[1].ID); err != nil {
		t.Errorf("other group's log: %v (the refused clears must not touch it)", err)
	}
	// Nothing was written by the refused calls.
	page, _ := svc.ListJobs(ctx, allJobs())
	if len(page.Jobs) != 3 {
		t.Fatalf("%d jobs after the refused creates, want 3 (two seeded, one allowed)", len(page.Jobs))
	}
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

func allJobs() admin.ListJobsParams { return admin.ListJobsParams{Limit: 100} }
