// Command httpexecutor is a small xjob executor served over HTTP: what you
// would run on ECS, EC2 or a laptop. It registers three demo handlers and
// talks to an xjob scheduler or an unmodified xxl-job 2.x admin.
//
//	go run ./examples/httpexecutor -admin http://127.0.0.1:8080/xxl-job-admin \
//	    -token default_token -appname xxl-job-executor-sample -listen :9999
//
// Every flag can also come from the environment (flags win):
// XJOB_ADMIN_ADDRESSES (comma-separated), XJOB_ACCESS_TOKEN, XJOB_APPNAME,
// XJOB_LISTEN, XJOB_ADDRESS, XJOB_LOG_DIR.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/xjobdev/xjob/pkg/executor"
)

func main() {
	if err := run(); err != nil {
		slog.Error("executor stopped", "err", err)
		os.Exit(1)
	}
}

func run() error {
	admins := flag.String("admin", env("XJOB_ADMIN_ADDRESSES", "http://127.0.0.1:8080/xxl-job-admin"), "comma-separated admin addresses")
	token := flag.String("token", env("XJOB_ACCESS_TOKEN", ""), "access token shared with the admin")
	appName := flag.String("appname", env("XJOB_APPNAME", "xxl-job-executor-sample"), "executor AppName (empty: no auto-registration)")
	listen := flag.String("listen", env("XJOB_LISTEN", ":9999"), "listen address")
	address := flag.String("address", env("XJOB_ADDRESS", ""), "address to register, e.g. http://10.0.0.5:9999/ (default: detected)")
	logDir := flag.String("logdir", env("XJOB_LOG_DIR", ""), "per-run log directory (default: $TMPDIR/xjob/jobhandler)")
	flag.Parse()

	// One Executor per process: configuration is validated once here.
	e, err := executor.New(executor.Config{
		AdminAddresses: strings.Split(*admins, ","),
		AccessToken:    *token,
		AppName:        *appName,
		ListenAddr:     *listen,
		Address:        *address,
		LogDir:         *logDir,
	})
	if err != nil {
		return err
	}

	// The JobHandler names below are what you type in the admin's job form.
	if err := e.Register("demoJobHandler", demo); err != nil {
		return err
	}
	if err := e.Register("shardingJobHandler", sharding); err != nil {
		return err
	}
	if err := e.Register("lifecycleJobHandler", lifecycle,
		executor.WithInit(func(context.Context) error { slog.Info("lifecycle init"); return nil }),
		executor.WithDestroy(func(context.Context) error { slog.Info("lifecycle destroy"); return nil }),
	); err != nil {
		return err
	}

	// Serve until SIGINT/SIGTERM (ECS sends SIGTERM), then give running jobs
	// 25 s to finish — inside ECS's default 30 s stop timeout.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return e.ListenAndServe(ctx, 25*time.Second)
}

// demo logs its parameter and works for a few seconds, stopping early if
// the trigger times out or is killed. Returning nil reports success (200).
func demo(ctx context.Context, job *executor.Job) error {
	job.Logf("demoJobHandler started, param=%q", job.Param)
	for i := 1; i <= 5; i++ {
		select {
		case <-ctx.Done():
			return ctx.Err() // the executor already reported timeout/kill
		case <-time.After(time.Second):
			job.Logf("beat %d", i)
		}
	}
	if job.Param == "fail" {
		return errors.New("asked to fail") // reported as 500 with this message
	}
	return nil
}

// sharding shows SHARDING_BROADCAST: each executor gets its own shard.
func sharding(_ context.Context, job *executor.Job) error {
	job.Logf("shard %d of %d", job.ShardIndex, job.ShardTotal)
	for item := 0; item < 10; item++ {
		if item%job.ShardTotal == job.ShardIndex {
			job.Logf("processing item %d", item)
		}
	}
	job.Succeed(fmt.Sprintf("shard %d/%d done", job.ShardIndex, job.ShardTotal))
	return nil
}

// lifecycle has init/destroy hooks, run when its job worker starts and ends.
func lifecycle(_ context.Context, job *executor.Job) error {
	job.Logger().Info("lifecycle run", "param", job.Param)
	return nil
}

func env(key, def string) string {
	if v, ok := os.LookupEnv(key); ok {
		return v
	}
	return def
}
