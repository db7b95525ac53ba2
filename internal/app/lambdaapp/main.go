package lambdaapp

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
)

// Main is the whole body of a function's main: it builds the App of
// function name once per execution environment (Init, outside the
// handler, so SDK clients and services are reused across invocations)
// and serves invocations with the handler that handler picks from it,
// e.g. Main("scan", func(a *App) any { return a.Scan }).
//
// It never returns: lambda.Start serves until the runtime ends the
// process, and a failed Init exits with status 1 after logging why, so
// that Lambda reports an init error instead of serving a broken App. It
// is meant for mains only, never for library code.
func Main(name string) {
	app, err := Init(context.Background(), name)
	if err != nil {
		slog.Error(name+": init", "err", err)
		os.Exit(1)
	}
	lambda.Start(app.Handler())
}
