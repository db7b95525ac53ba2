package adminclient_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/adapter/execclient"
	"github.com/xjobdev/xjob/internal/adapter/sqlitestore"
	"github.com/xjobdev/xjob/internal/admin"
	"github.com/xjobdev/xjob/internal/scheduler/alarm"
	"github.com/xjobdev/xjob/internal/scheduler/callback"
	"github.com/xjobdev/xjob/internal/scheduler/registry"
	"github.com/xjobdev/xjob/internal/web/adminapi"
	"github.com/xjobdev/xjob/pkg/adminclient"
	"github.com/xjobdev/xjob/pkg/clock"
)

// exampleToken is the admin token of the API the examples talk to.
const exampleToken = "example-admin-token-0123456789"

// startAdmin serves the real admin API in process, as `xjob local`
// wires it, over a fresh SQLite file and a clock stopped at
// 2026-01-01 00:00:00 UTC, so that the examples print the same fire times
// on every run. It returns the API's address and a stop function.
func startAdmin() (string, func()) {
	dir, err := os.MkdirTemp("", "adminclient-example")
	if err != nil {
		log.Fatal(err)
	}
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	quiet := slog.New(slog.DiscardHandler)
	db, err := sqlitestore.Open(context.Background(), filepath.Join(dir, "xjob.db"), sqlitestore.Options{Clock: clk})
	if err != nil {
		log.Fatal(err)
	}
	cb, err := callback.New(callback.Config{Store: db, Queues: db, Alarmer: alarm.Log{Logger: quiet}, Clock: clk, Logger: quiet})
	if err != nil {
		log.Fatal(err)
	}
	reg, err := registry.New(registry.Config{Store: db, Clock: clk, Logger: quiet})
	if err != nil {
		log.Fatal(err)
	}
	ec, err := execclient.New(execclient.Options{})
	if err != nil {
		log.Fatal(err)
	}
	svc, err := admin.New(admin.Config{Store: db, Queues: db, Executors: ec, Finisher: cb, Clock: clk, Logger: quiet})
	if err != nil {
		log.Fatal(err)
	}
	h, err := adminapi.New(adminapi.Config{Admin: svc, Registry: reg, Callback: cb, AdminToken: exampleToken,
		AccessToken: "example-access-token", Logger: quiet, Clock: clk})
	if err != nil {
		log.Fatal(err)
	}
	srv := httptest.NewServer(h)
	return srv.URL, func() {
		srv.Close()
		ec.Close()
		_ = db.Close()
		_ = os.RemoveAll(dir)
	}
}

// A tool creates an executor group and a job, starts the job and asks
// when it fires next, all through the admin API's /v1 routes.
func Example() {
	addr, stop := startAdmin()
	defer stop()
	ctx := context.Background()

	c, err := adminclient.New(addr, exampleToken)
	if err != nil {
		log.Fatal(err)
	}
	g, err := c.GroupCreate(ctx, xjob.Group{AppName: "billing", Title: "Billing",
		AddressType: xjob.AddressManual, AddressList: []string{"http://10.0.0.5:9999"}})
	if err != nil {
		log.Fatal(err)
	}
	job, err := c.JobCreate(ctx, xjob.Job{GroupID: g.ID, Description: "nightly invoices", Author: "ann",
		ScheduleType: xjob.ScheduleCron, ScheduleConf: "0 0 2 * * ?", TimeZone: "Europe/Berlin",
		GlueType: xjob.GlueBean, Handler: "invoices"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("created:", job.Description, job.TriggerStatus == xjob.StatusRunning)
	if job, err = c.JobStart(ctx, job.ID); err != nil {
		log.Fatal(err)
	}
	fmt.Println("started:", job.TriggerStatus == xjob.StatusRunning)
	next, err := c.JobNext(ctx, job.ID, 2)
	if err != nil {
		log.Fatal(err)
	}
	for _, t := range next {
		fmt.Println("fires at", t.UTC().Format(time.RFC3339))
	}
	// Output:
	// created: nightly invoices false
	// started: true
	// fires at 2026-01-01T01:00:00Z
	// fires at 2026-01-02T01:00:00Z
}

// Every failure the server answers is an *APIError; errors.Is maps its
// status to the domain's sentinels, so a caller branches on meaning.
func ExampleAPIError() {
	addr, stop := startAdmin()
	defer stop()
	ctx := context.Background()
	c, err := adminclient.New(addr, exampleToken)
	if err != nil {
		log.Fatal(err)
	}

	_, err = c.JobGet(ctx, 404)
	fmt.Println("missing job is ErrNotFound:", errors.Is(err, xjob.ErrNotFound))

	_, err = c.JobCreate(ctx, xjob.Job{Description: "no group, no schedule"})
	if apiErr, ok := adminclient.AsAPIError(err); ok {
		fmt.Println("status:", apiErr.Status)
		for _, p := range apiErr.Problems {
			fmt.Printf("%s: %s\n", p.Field, p.Message)
		}
	}
	// Output:
	// missing job is ErrNotFound: true
	// status: 400
	// jobGroup: is required
	// author: is required
	// executorHandler: is required
}
