package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/admin"
	"github.com/xjobdev/xjob/internal/demo"
	"github.com/xjobdev/xjob/pkg/executor"
)

// The demo's names. Jobs are found again by group and description, so
// --demo on an existing file creates nothing twice.
const (
	demoAppName     = "xjob-demo"
	demoHandler     = demo.DemoHandler
	demoCronDesc    = "demo: cron every 2 s"
	demoFixRateDesc = "demo: fix rate every 5 s"
	demoAuthor      = "xjob"
)

// demoJobs are the two demo jobs, as a person would create them.
func demoJobs(groupID int64) []xjob.Job {
	return []xjob.Job{
		{GroupID: groupID, Description: demoCronDesc, Author: demoAuthor,
			ScheduleType: xjob.ScheduleCron, ScheduleConf: "*/2 * * * * ?",
			Handler: demoHandler, Param: "cron", TriggerStatus: xjob.StatusRunning},
		{GroupID: groupID, Description: demoFixRateDesc, Author: demoAuthor,
			ScheduleType: xjob.ScheduleFixRate, ScheduleConf: "5",
			Handler: demoHandler, Param: "fix-rate", TriggerStatus: xjob.StatusRunning},
	}
}

// demoExecutor is the in-process demo executor: the SDK served on loopback
// with the handlers of the HTTP example (examples/httpexecutor), so what
// `make run` shows is what that example does.
type demoExecutor struct {
	address string
	exec    *executor.Executor
	srv     *http.Server
	groupID int64
	jobIDs  []int64
}

// startDemo makes sure the demo group and jobs exist, starts the demo
// executor and waits for its registration; jobs it created are triggered
// once at once, so a success log shows up before their first scheduled fire.
func startDemo(ctx context.Context, cfg Config, svc *services, baseURL string) (*demoExecutor, error) {
	g, err := ensureDemoGroup(ctx, svc.admin)
	if err != nil {
		return nil, err
	}
	jobs, created, err := ensureDemoJobs(ctx, svc.admin, g.ID)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", cfg.DemoListen)
	if err != nil {
		return nil, fmt.Errorf("demo executor: --demo-listen (XJOB_DEMO_LISTEN) %s: %w", cfg.DemoListen, err)
	}
	d := &demoExecutor{address: "http://" + ln.Addr().String() + "/", groupID: g.ID}
	for _, j := range jobs {
		d.jobIDs = append(d.jobIDs, j.ID)
	}
	d.exec, err = executor.New(executor.Config{
		AdminAddresses: []string{baseURL},
		AccessToken:    cfg.AccessToken,
		AppName:        demoAppName,
		Address:        d.address,
		LogDir:         filepath.Join(filepath.Dir(cfg.DB), "executor-logs"),
		Logger:         svc.logger.With("component", "demo-executor"),
	})
	if err == nil {
		// The HTTP example's handlers (internal/demo): its
		// demoJobHandler takes about half a second, so the 2 s cron never
		// piles up behind SERIAL_EXECUTION.
		err = demo.Register(d.exec, svc.logger.With("component", "demo-executor"))
	}
	if err == nil {
		err = d.exec.Start()
	}
	if err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("demo executor: %w", err)
	}
	d.srv = executor.NewServer(d.exec)
	go func() { _ = d.srv.Serve(ln) }()

	if len(created) > 0 {
		if err := waitRegistered(ctx, svc, d.address, 5*time.Second); err != nil {
			svc.logger.Warn("demo executor not registered yet; jobs fire once it is", "err", err)
		} else {
			for _, id := range created {
				if _, err := svc.admin.TriggerJob(ctx, admin.TriggerParams{JobID: id}); err != nil {
					svc.logger.Warn("demo first trigger", "job", id, "err", err)
				}
			}
		}
	}
	return d, nil
}

// stop deregisters the executor, lets its running jobs finish and send
// their results, then closes its listener.
func (d *demoExecutor) stop(ctx context.Context) {
	_ = d.exec.Shutdown(ctx)
	// Every request is now answered at once, so a second is plenty; the
	// 5 s http.Server.Shutdown grants connections that never sent a
	// request (spares the executor client dialled) is not worth waiting.
	sctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if err := d.srv.Shutdown(sctx); err != nil {
		_ = d.srv.Close()
	}
}

func ensureDemoGroup(ctx context.Context, a *admin.Service) (xjob.Group, error) {
	groups, err := a.ListGroups(ctx, admin.ListGroupsParams{AppName: demoAppName})
	if err != nil {
		return xjob.Group{}, fmt.Errorf("demo group: %w", err)
	}
	for _, g := range groups {
		if g.AppName == demoAppName {
			return g, nil
		}
	}
	g, err := a.CreateGroup(ctx, xjob.Group{AppName: demoAppName, Title: "xjob demo", AddressType: xjob.AddressAuto})
	if err != nil {
		return xjob.Group{}, fmt.Errorf("demo group: %w", err)
	}
	return g, nil
}

func ensureDemoJobs(ctx context.Context, a *admin.Service, groupID int64) (jobs []xjob.Job, created []int64, err error) {
	for _, want := range demoJobs(groupID) {
		page, err := a.ListJobs(ctx, admin.ListJobsParams{GroupID: groupID, Description: want.Description, Limit: 100})
		if err != nil {
			return nil, nil, fmt.Errorf("demo jobs: %w", err)
		}
		var found *xjob.Job
		for i := range page.Jobs {
			if page.Jobs[i].Description == want.Description {
				found = &page.Jobs[i]
				break
			}
		}
		if found == nil {
			j, err := a.CreateJob(ctx, want)
			if err != nil {
				return nil, nil, fmt.Errorf("demo job %q: %w", want.Description, err)
			}
			found = &j
			created = append(created, j.ID)
		}
		jobs = append(jobs, *found)
	}
	return jobs, created, nil
}

// waitRegistered polls until address is among the demo app's live executors.
func waitRegistered(ctx context.Context, svc *services, address string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		live, err := svc.registry.LiveAddresses(ctx, demoAppName)
		if err == nil {
			for _, a := range live {
				if a == address {
					return nil
				}
			}
		}
		if time.Now().After(deadline) {
			if err == nil {
				err = errors.New("registration not seen")
			}
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// printBanner tells a person what runs and what to try next. A token is
// printed once, on the start that generated it; later starts name its file
// (the banner often ends up in terminal scrollback and CI logs).
func printBanner(w io.Writer, cfg Config, info Info, generated, accessGenerated bool) {
	fmt.Fprintf(w, "\nxjob local is running\n")
	fmt.Fprintf(w, "  API           %s   (xxl-job executors: admin address %s or %s/xxl-job-admin)\n", info.URL, info.URL, info.URL)
	fmt.Fprintf(w, "  database      %s\n", cfg.DB)
	switch {
	case info.TokenFile == "":
		fmt.Fprintf(w, "  admin token   from --admin-token / XJOB_ADMIN_TOKEN\n")
	case generated:
		fmt.Fprintf(w, "  admin token   %s\n                (generated on first start, kept in %s, mode 0600; shown only now)\n", info.AdminToken, info.TokenFile)
	default:
		fmt.Fprintf(w, "  admin token   kept in %s\n", info.TokenFile)
	}
	switch {
	case info.AccessTokenFile == "":
		fmt.Fprintf(w, "  access token  from --access-token / XJOB_ACCESS_TOKEN (give it to executors)\n")
	case accessGenerated:
		fmt.Fprintf(w, "  access token  %s\n                (for executors' XXL-JOB-ACCESS-TOKEN; generated, kept in %s, mode 0600; shown only now)\n",
			info.AccessToken, info.AccessTokenFile)
	default:
		fmt.Fprintf(w, "  access token  kept in %s (executors' XXL-JOB-ACCESS-TOKEN)\n", info.AccessTokenFile)
	}
	if info.AdminPassword != "" {
		fmt.Fprintf(w, "  console       %s/console/   user admin, password %s\n                (generated on first start and shown only now; change it under Users)\n",
			info.URL, info.AdminPassword)
	} else {
		fmt.Fprintf(w, "  console       %s/console/\n", info.URL)
	}
	if info.DemoExecutor != "" {
		fmt.Fprintf(w, "\nDemo: group %q, jobs %q (cron */2 * * * * ?) and %q (FIX_RATE 5 s),\n      served by the demo executor at %s\n",
			demoAppName, demoCronDesc, demoFixRateDesc, info.DemoExecutor)
	}
	tokenExpr := "<your admin token>"
	if info.TokenFile != "" {
		tokenExpr = "$(cat " + info.TokenFile + ")"
	}
	fmt.Fprintf(w, "\nNext, in another terminal:\n")
	fmt.Fprintf(w, "  export XJOB_SERVER=%s XJOB_TOKEN=%s\n", info.URL, tokenExpr)
	fmt.Fprintf(w, "  bin/xjob job list\n")
	job := int64(1)
	if len(info.DemoJobs) > 0 {
		job = info.DemoJobs[0]
	}
	fmt.Fprintf(w, "  bin/xjob log list --job %d\n", job)
	fmt.Fprintf(w, "  curl -H \"Authorization: Bearer $XJOB_TOKEN\" '%s/v1/logs?job=%d&limit=5'\n", info.URL, job)
	fmt.Fprintf(w, "\nCtrl-C stops it; nothing is lost, and the next start resumes from %s.\n\n", cfg.DB)
}
