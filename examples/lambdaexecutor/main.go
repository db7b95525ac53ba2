// Command lambdaexecutor serves xjob job handlers from an AWS Lambda
// function URL. Build it as "bootstrap" for provided.al2023 (arm64):
//
//	GOOS=linux GOARCH=arm64 go build -tags lambda.norpc -o bootstrap ./examples/lambdaexecutor
//
// Configuration comes from the function's environment: XJOB_ADMIN_ADDRESSES
// (comma-separated) and XJOB_ACCESS_TOKEN. Create the function URL with
// InvokeMode RESPONSE_STREAM: /run then replies as soon as the trigger is
// accepted and the invocation runs the job afterwards, so jobs may be longer
// than the dispatcher's 3 s + 3 s /run timeout. Register the function URL as
// the (manual) address of an executor group; see package lambdaexec for what
// beat, idleBeat, kill, log and block strategies mean on Lambda.
package main

import (
	"log/slog"
	"os"
	"strings"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/xjobdev/xjob/internal/demo"
	"github.com/xjobdev/xjob/pkg/executor"
	"github.com/xjobdev/xjob/pkg/executor/lambdaexec"
)

func main() {
	// Built once per execution environment, outside the handler.
	e, err := executor.New(executor.Config{
		AdminAddresses: strings.Split(os.Getenv("XJOB_ADMIN_ADDRESSES"), ","),
		AccessToken:    os.Getenv("XJOB_ACCESS_TOKEN"),
		JobLogMirror:   os.Stdout, // job log lines also go to CloudWatch Logs
	})
	if err != nil {
		slog.Error("executor config", "err", err)
		os.Exit(1)
	}
	// The very handlers of the HTTP example: the same code runs on ECS and
	// on Lambda. On Lambda a handler's ctx also ends just before the
	// invocation's deadline (less Config.InlineReserve).
	if err := demo.Register(e, nil); err != nil {
		slog.Error("register", "err", err)
		os.Exit(1)
	}
	lambda.Start(lambdaexec.StreamingHandler(e))
}
