// Package webfn is the web Lambda function: the human-facing routes of
// the HTTP API, everything the executor-facing registry and callback
// functions do not take: the console (/console/, and / redirects there),
// the /v1 admin API, /metrics, /healthz and executors' job declarations
// (/api/xjob/declare). It has its own reserved concurrency, so a flood of
// sign-ins (argon2id, ≈ 0.2 s of CPU each) or admin calls cannot delay a
// heartbeat or a result.
package webfn

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/xjobdev/xjob/internal/adapter/awsconfig"
	"github.com/xjobdev/xjob/internal/adapter/httptarget"
	"github.com/xjobdev/xjob/internal/admin"
	"github.com/xjobdev/xjob/internal/app/lambdaapp/dispatchfn"
	"github.com/xjobdev/xjob/internal/app/lambdaapp/pipeline"
	"github.com/xjobdev/xjob/internal/app/lambdaapp/scanfn"
	"github.com/xjobdev/xjob/internal/app/lambdaapp/targets"
	"github.com/xjobdev/xjob/internal/app/lambdaapp/wiring"
	"github.com/xjobdev/xjob/internal/metric"
	"github.com/xjobdev/xjob/internal/web/adminapi"
	"github.com/xjobdev/xjob/internal/web/auth"
	"github.com/xjobdev/xjob/internal/web/console"
)

// resumeTimeout bounds the start's resume of change sets (ResumeChanges),
// well within Lambda's 10 s for a function's init.
const resumeTimeout = 5 * time.Second

// Function is the web function.
type Function struct {
	b    *wiring.Base
	http http.Handler
}

// New builds the web function on b: the admin service (which pushes the
// fires of jobs it creates or edits within the scan horizon, with the
// scan's configuration), the admin API and the console.
func New(b *wiring.Base) (*Function, error) {
	fail := func(what string, err error) (*Function, error) {
		return nil, fmt.Errorf("lambda web: %s: %w", what, err)
	}
	cb, err := pipeline.Callback(b)
	if err != nil {
		return nil, err
	}
	reg, err := pipeline.Registry(b)
	if err != nil {
		return nil, err
	}
	exec, err := pipeline.Executors(b, dispatchfn.Concurrency)
	if err != nil {
		return nil, err
	}
	// HTTP and AWS jobs: the web function checks them at save (the
	// address rule, the allowed ARNs) and makes their test calls; the
	// ring and dispatch functions fire them. A log of one is viewed and
	// killed through the built-in executor's address.
	tg, err := targets.New(b, cb, testCalls)
	if err != nil {
		return nil, err
	}
	tc := targetConfig(b, tg)
	adm, err := admin.New(admin.Config{Store: b.Counted, Queues: b.Queues, Executors: httptarget.Executors{Remote: exec, Local: tg.Executor}, Finisher: cb,
		Clock: b.Clock, Logger: b.Log, Scan: scanfn.Tunables(b), AnyTriggerAddress: b.Config.AnyTriggerAddress,
		StartDeclaredJobs: b.Config.StartDeclaredJobs, Targets: tc})
	if err != nil {
		return fail("admin", err)
	}
	// An apply whose environment died in the middle may have left its
	// change set half-written: finish (or undo) it before this environment
	// serves a read. An error leaves it to the next start, the registry's
	// maintenance or the next apply, and the console up.
	resumeCtx, cancel := context.WithTimeout(context.Background(), resumeTimeout)
	if resumed, err := adm.ResumeChanges(resumeCtx); err != nil {
		b.Log.Error("change sets not resumed at start", "err", err)
	} else if !resumed {
		b.Log.Info("change sets not resumed at start: an apply or a child edit holds the lease")
	}
	cancel()
	// Console sessions are signed with a key derived from the session
	// secret, its own SSM parameter, so every environment of the function
	// verifies them alike and no token holder can forge one. Sign-in
	// attempts and sign-outs live in the store, so every environment
	// counts and refuses alike.
	adminTokens := b.AdminTokens()
	if len(adminTokens) == 0 {
		return fail("auth", errors.New("no admin token"))
	}
	// Who may write GLUE jobs (code the executors run) is the
	// deployment's GluePolicy parameter: admins unless it says otherwise.
	glue, err := auth.ParseGluePolicy(b.Config.GluePolicy)
	if err != nil {
		return fail("auth", err)
	}
	au, err := auth.New(auth.Config{Users: b.Store, Store: b.Store, AdminToken: adminTokens[0],
		Key: auth.DeriveKey(b.SessionKey()), Glue: glue, Clock: b.Clock})
	if err != nil {
		return fail("auth", err)
	}
	b.Log.Info("GLUE policy: "+string(glue)+" (GluePolicy parameter, "+awsconfig.EnvGluePolicy+")", "gluePolicy", glue)
	api, err := adminapi.New(adminapi.Config{Admin: adm, Registry: reg, Callback: cb,
		Metrics: b.Metrics, Gauges: metric.Gauges{ExecutorsOnline: reg.OnlineCounts,
			RunsToday: metric.RunsTodayFrom(b.Reports, b.Clock.Now), Logger: b.Log},
		AdminToken: adminTokens[0], AdminTokens: b.AdminTokens, Auth: au, AccessTokens: b.AccessTokens,
		Logger: b.Log, Clock: b.Clock})
	if err != nil {
		return fail("admin api", err)
	}
	con, err := console.New(console.Config{Admin: adm, Auth: au, Clock: b.Clock, Logger: b.Log})
	if err != nil {
		return fail("console", err)
	}
	mux := http.NewServeMux()
	// The bare address of the HTTP API is the console's: a person who
	// opens the stack's URL lands on the sign-in page.
	mux.Handle("GET /{$}", http.RedirectHandler("/console/", http.StatusFound))
	mux.Handle("/", console.Mount(api, con))
	return &Function{b: b, http: mux}, nil
}

// testCalls bounds the test calls of target jobs one environment makes
// at once (a person's button).
const testCalls = 4

// AWSTargetsParam names the setting an AWS job's refused ARN points at:
// the stacks' parameter, and the variable it sets.
const AWSTargetsParam = "the stack's AWSTargetARNs parameter (Terraform: aws_target_arns; " + awsconfig.EnvAWSTargetARNs + ")"

// targetConfig is the admin's side of target jobs on AWS: secret headers
// sealed with the session key's derived key, target URLs under the
// executors' address rule, and AWS jobs limited to the listed ARNs. The
// list is always set, empty when the parameter is, so that an AWS job is
// refused naming the parameter rather than as unavailable: on AWS the
// fix is one parameter away.
func targetConfig(b *wiring.Base, tg *targets.Executor) *admin.TargetConfig {
	sealer, _ := targets.Sealer(b) // nil (targets.New warned): secret headers are refused at save
	rule := b.Config.Egress
	allow := b.Config.AWSTargets
	return &admin.TargetConfig{Sealer: sealer, CheckURL: func(ctx context.Context, rawURL string) error {
		return rule.Check(ctx, net.DefaultResolver, rawURL)
	}, AWS: &allow, AWSParam: AWSTargetsParam, Try: tg.Try}
}

// Build is New as a wiring.Builder: the web main's whole wiring.
func Build(b *wiring.Base) (any, error) {
	f, err := New(b)
	if err != nil {
		return nil, err
	}
	return f.Handle, nil
}

// Handle serves one HTTP API request.
func (f *Function) Handle(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	defer f.b.FlushReports(ctx)
	return wiring.ServeHTTPAPI(ctx, f.http, req)
}
