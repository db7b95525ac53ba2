package wiring

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	awscfg "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	awslambda "github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/xjobdev/xjob/internal/adapter/awsconfig"
	"github.com/xjobdev/xjob/internal/adapter/dynamostore"
)

// Builder builds a function's handler (what lambda.Start serves) on its
// Base.
type Builder func(*Base) (any, error)

// Main is the whole body of a function's main: it builds the function
// once per execution environment (Init, outside the handler, so SDK
// clients and services are reused across invocations) and serves
// invocations with the handler build returns, e.g.
// wiring.Main("ring", ringfn.Build, secrets.FromSSM). secrets builds the
// source of the function's SSM parameters; nil for a function with none
// (the scan), which then links no SSM client.
//
// It never returns: it serves until Lambda ends the environment. The
// runtime registers an (internal) extension with the Extensions API,
// which makes Lambda send SIGTERM before its SIGKILL when it shuts the
// environment down; the process then writes what it held back
// (Base.Shutdown: the run-report counts and EMF records FlushReports
// defers) within ShutdownFlushTimeout, under Lambda's 500 ms, and exits.
// A function that cannot start logs why in one line (JSON, with the
// function's name and every configuration problem at once) and exits
// with status 1, so Lambda reports an init error instead of serving a
// broken function.
func Main(name string, build Builder, secrets SecretsFactory) {
	h, b, err := Init(context.Background(), name, build, secrets)
	if err != nil {
		slog.New(slog.NewJSONHandler(os.Stdout, nil)).Error("function cannot start", "function", name, "err", err.Error())
		os.Exit(1)
	}
	lambda.StartWithOptions(h, lambda.WithEnableSIGTERM(func() {
		b.Shutdown(context.Background())
		// Once SIGTERM is handled it no longer ends the process: exit
		// rather than idle until the SIGKILL.
		os.Exit(0)
	}))
}

// Init reads function name's configuration from the process environment,
// loads the AWS SDK configuration (region and credentials from the Lambda
// environment), builds the Base and the function's handler.
func Init(ctx context.Context, name string, build Builder, secrets SecretsFactory) (any, *Base, error) {
	cfg, err := LoadConfig(name, os.Getenv)
	if err != nil {
		return nil, nil, err
	}
	logger := slog.New(slog.NewJSONHandler(os.Stdout, &slog.HandlerOptions{Level: cfg.LogLevel})).With("function", name)
	awsConf, err := awscfg.LoadDefaultConfig(ctx, awscfg.WithHTTPClient(sdkHTTPClient()))
	if err != nil {
		return nil, nil, fmt.Errorf("lambda %s: aws config: %w", name, err)
	}
	d := Deps{
		DynamoDB: dynamodb.NewFromConfig(awsConf),
		SQS:      sqs.NewFromConfig(awsConf),
		Logger:   logger,
		// AWS jobs call with the function's role, through the endpoints
		// the environment names (AWS_ENDPOINT_URL_*), as every client does.
		TargetAWS: &awsConf,
	}
	if cfg.AlarmTopicARN != "" {
		d.SNS = sns.NewFromConfig(awsConf)
	}
	if cfg.DispatchFunction != "" {
		d.Lambda = awslambda.NewFromConfig(awsConf)
	}
	if names := cfg.SecretNames(); len(names) > 0 && secrets != nil {
		d.Secrets = secrets(awsConf, names, cfg.SecretsRefresh, logger)
	}
	b, err := NewBase(cfg, d)
	if err != nil {
		return nil, nil, err
	}
	if err := b.LoadSecrets(ctx); err != nil {
		return nil, nil, err
	}
	if fn, _ := awsconfig.Lookup(name); fn.ChecksLayout {
		tables := dynamostore.TablesWithPrefix(cfg.TablePrefix)
		if err := CheckLayout(ctx, d.DynamoDB.(LayoutAPI), tables.Leases, b.Config.Shards, b.Store.LogPages()); err != nil {
			return nil, nil, fmt.Errorf("lambda %s: %w", name, err)
		}
	}
	h, err := build(b)
	return h, b, err
}

// SDKConnsPerHost is how many idle connections the SDK clients of one
// execution environment keep per endpoint. The SDK's default is 10, but
// one invocation fans out further: the ring sends a bucket's lanes and
// fires concurrently, dispatch reads and writes up to 32 tasks' items at
// once, callback records 16 results at once. Connections past the idle
// pool are opened and closed per request (a TLS handshake each on AWS),
// which is the latency and the CPU this avoids.
const SDKConnsPerHost = 64

// sdkHTTPClient is the SDK's HTTP client with the pool sized for one
// environment's concurrency (SDKConnsPerHost), shared by the DynamoDB,
// SQS and SNS clients.
func sdkHTTPClient() *awshttp.BuildableClient {
	return awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) {
		t.MaxIdleConns, t.MaxIdleConnsPerHost = 3*SDKConnsPerHost, SDKConnsPerHost
	})
}
