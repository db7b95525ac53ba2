// Command httpexecutor is a small xjob executor served over HTTP: what you
// would run on ECS, EC2 or a laptop. It serves the handlers of package
// demo (the same ones `make run` uses) and talks to an xjob scheduler or an
// unmodified xxl-job 2.x admin.
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
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/xjobdev/xjob/internal/demo"
	"github.com/xjobdev/xjob/pkg/executor"
)

// grace is how long running jobs may finish after SIGTERM: inside ECS's
// default 30 s stop timeout.
const grace = 25 * time.Second

func main() {
	// Serve until SIGINT/SIGTERM (ECS sends SIGTERM).
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	e, err := newExecutor(os.Args[1:], os.LookupEnv, os.Stderr)
	if err == nil {
		err = e.ListenAndServe(ctx, grace)
	}
	if err != nil {
		slog.Error("executor stopped", "err", err)
		os.Exit(1)
	}
}

// newExecutor builds the executor from flags and environment and registers
// the demo handlers. It is all main does before serving, kept apart so the
// end-to-end test runs exactly this executor.
func newExecutor(args []string, getenv func(string) (string, bool), usage io.Writer) (*executor.Executor, error) {
	env := func(key, def string) string {
		if v, ok := getenv(key); ok {
			return v
		}
		return def
	}
	fs := flag.NewFlagSet("httpexecutor", flag.ContinueOnError)
	fs.SetOutput(usage)
	admins := fs.String("admin", env("XJOB_ADMIN_ADDRESSES", "http://127.0.0.1:8080/xxl-job-admin"), "comma-separated admin addresses")
	token := fs.String("token", env("XJOB_ACCESS_TOKEN", ""), "access token shared with the admin")
	appName := fs.String("appname", env("XJOB_APPNAME", "xxl-job-executor-sample"), "executor AppName (empty: no auto-registration)")
	listen := fs.String("listen", env("XJOB_LISTEN", ":9999"), "listen address")
	address := fs.String("address", env("XJOB_ADDRESS", ""), "address to register, e.g. http://10.0.0.5:9999/ (default: detected)")
	logDir := fs.String("logdir", env("XJOB_LOG_DIR", ""), "per-run log directory (default: the user cache dir's xjob-executor/jobhandler, see executor.Config.LogDir)")
	if err := fs.Parse(args); err != nil {
		return nil, fmt.Errorf("flags: %w", err)
	}

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
		return nil, err
	}
	// The handler names are what you type as JobHandler in the admin's job
	// form: demoJobHandler, shardingJobHandler, lifecycleJobHandler.
	if err := demo.Register(e, nil); err != nil {
		return nil, err
	}
	return e, nil
}
