package console_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/web/auth"
	"github.com/xjobdev/xjob/internal/web/console"
	"github.com/xjobdev/xjob/pkg/clock"
)

// Scale of BenchmarkConsoleAtScale: jobs over ten groups, and logs over
// the last seven days (one every 0.6 s), one in ten failed.
const (
	scaleGroups = 10
	scaleJobs   = 100_000
	scaleLogs   = 1_000_000
)

// BenchmarkConsoleAtScale measures the server time of the console's
// dashboard, job list and log list on SQLite at 100,000 jobs and
// 1,000,000 logs, for an admin (every group) and a normal user (one
// group). The store is seeded through its own bulk paths (concurrent
// inserts group-committed, LogCreateMany in batches of 1,000), not
// through HTTP.
//
//	go test -run '^$' -bench ConsoleAtScale -benchtime 20x ./internal/web/console/
func BenchmarkConsoleAtScale(b *testing.B) {
	ctx := context.Background()
	now := time.Date(2026, 3, 8, 12, 0, 0, 0, time.UTC)
	clk := clock.NewFake(now)
	db, svc, au := newStack(b, clk, "") // no GLUE policy given: auth's default
	quiet := slog.New(slog.DiscardHandler)
	con, err := console.New(console.Config{Admin: svc, Auth: au, Clock: clk, Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}

	seedStart := time.Now()
	groups := make([]xjob.Group, scaleGroups)
	for i := range groups {
		if groups[i], err = db.GroupInsert(ctx, xjob.Group{AppName: fmt.Sprintf("scale-%d", i), Title: fmt.Sprintf("Scale %d", i),
			AddressType: xjob.AddressManual, AddressList: []string{"http://127.0.0.1:1"}}); err != nil {
			b.Fatal(err)
		}
	}
	jobIDs := make([]int64, scaleJobs)
	jobGroup := make([]int64, scaleJobs)
	var wg sync.WaitGroup
	const writers = 64
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < scaleJobs; i += writers {
				g := groups[i%scaleGroups].ID
				j, err := db.JobInsert(ctx, xjob.Job{GroupID: g, Description: "scale job " + strconv.Itoa(i), Author: "bench",
					ScheduleType: xjob.ScheduleCron, ScheduleConf: "0 0 * * * ?", TimeZone: "UTC",
					MisfireStrategy: xjob.MisfireDoNothing, AfterCompletion: xjob.AfterKeep, RouteStrategy: xjob.RouteFirst,
					Handler: "h", BlockStrategy: xjob.BlockSerialExecution, GlueType: xjob.GlueBean})
				if err != nil {
					errs <- err
					return
				}
				jobIDs[i], jobGroup[i] = j.ID, g
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
	const batch = 1000
	for from := 0; from < scaleLogs; from += batch * 8 {
		var lw sync.WaitGroup
		for k := range 8 {
			lw.Add(1)
			go func() {
				defer lw.Done()
				logs := make([]xjob.Log, 0, batch)
				for i := from + k*batch; i < min(from+(k+1)*batch, scaleLogs); i++ {
					at := now.UnixMilli() - int64(i)*600
					l := xjob.Log{OccurrenceID: "scale/" + strconv.Itoa(i), JobID: jobIDs[i%scaleJobs], GroupID: jobGroup[i%scaleJobs],
						TriggerType: xjob.TriggerCron, ScheduledTime: at, TriggerTime: at, TriggerCode: 200,
						HandleTime: at + 50, HandleCode: 200}
					if i%10 == 0 {
						l.HandleCode, l.HandleMsg = 500, "failed"
					}
					logs = append(logs, l)
				}
				if _, err := db.LogCreateMany(ctx, logs); err != nil {
					b.Error(err)
				}
			}()
		}
		lw.Wait()
	}
	// The report's counters per day and group, as dispatch and the
	// callback would have added them for these logs.
	type counter struct {
		day   string
		group int64
	}
	report := map[counter]*xjob.ReportDay{}
	for i := range scaleLogs {
		k := counter{time.UnixMilli(now.UnixMilli() - int64(i)*600).UTC().Format(time.DateOnly), jobGroup[i%scaleJobs]}
		d := report[k]
		if d == nil {
			d = &xjob.ReportDay{Day: k.day, GroupID: k.group}
			report[k] = d
		}
		if i%10 == 0 {
			d.FailCount++
		} else {
			d.SucCount++
		}
	}
	for _, d := range report {
		if err := db.ReportAdd(ctx, *d); err != nil {
			b.Fatal(err)
		}
	}
	root := auth.Principal{Token: true}
	for _, u := range []auth.UserInput{
		{Username: "boss", Password: "boss-password", Role: xjob.RoleAdmin},
		{Username: "normal", Password: "normal-password", GroupIDs: []int64{groups[3].ID}},
	} {
		if _, err := au.CreateUser(ctx, root, u); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("seeded %d jobs and %d logs in %s", scaleJobs, scaleLogs, time.Since(seedStart).Round(time.Second))

	cookie := func(user, pw string) *http.Cookie {
		rec := httptest.NewRecorder()
		if _, err := au.SignIn(rec, httptest.NewRequest("POST", "/console/login", nil), user, pw); err != nil {
			b.Fatal(err)
		}
		return rec.Result().Cookies()[0]
	}
	boss, normal := cookie("boss", "boss-password"), cookie("normal", "normal-password")
	g3 := strconv.FormatInt(groups[3].ID, 10)
	for _, bc := range []struct {
		name string
		c    *http.Cookie
		path string
	}{
		{"dashboard/admin", boss, "/console/"},
		{"dashboard/normal", normal, "/console/"},
		{"jobs/all", boss, "/console/jobs"},
		{"jobs/group", boss, "/console/jobs?group=" + g3},
		{"jobs/filtered", boss, "/console/jobs?group=" + g3 + "&desc=scale+job+99"},
		{"logs/all", boss, "/console/logs"},
		{"logs/group", normal, "/console/logs?group=" + g3},
		{"logs/failed", boss, "/console/logs?status=fail"},
		{"logs/job", boss, "/console/logs?job=" + strconv.FormatInt(jobIDs[42], 10)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				req := httptest.NewRequest("GET", bc.path, nil)
				req.AddCookie(bc.c)
				rec := httptest.NewRecorder()
				con.ServeHTTP(rec, req)
				if rec.Code != 200 {
					b.Fatalf("%s: %d %s", bc.path, rec.Code, rec.Body)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/1000, "ms/page")
		})
	}
}
