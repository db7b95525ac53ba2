package emulator

// This file holds the emulators a test binary shares and the SDK clients
// for them: each emulator is started once per test binary, on first use,
// on a port the OS picks on 127.0.0.1. The processes end when the test
// binary calls Stop (Main does it after m.Run) and, as a safety net, when
// their stdin closes, which happens when the test binary dies however it
// dies.
//
// The emulators are installed from npm with a committed lock file ("make
// emulators", i.e. npm ci --prefix test/emulators; make test runs it). When
// they are missing a test fails with that hint; under go test -short every
// test that needs them is skipped (internal/testenv/tool is the gate).

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/xjobdev/xjob/internal/testenv/tool"
)

// Region is the region every emulator client is built for; the emulators
// accept any region, the SDK needs one to sign.
const Region = "us-east-1"

// startTimeout bounds how long an emulator may take to print READY.
const startTimeout = 30 * time.Second

// shared is one emulator process of this test binary, started on first
// use.
type shared struct {
	start func(dir string, timeout time.Duration) (*Process, error)

	once    sync.Once
	proc    *Process
	err     error
	missing bool // err means "not installed", not "broken"
	mu      sync.Mutex
}

var (
	dynalite = &shared{start: StartDynalite}
	fauxqs   = &shared{start: StartFauxqs}
)

// Dynalite returns the base endpoint (http://127.0.0.1:port) of the shared
// dynalite server, starting it on first use.
func Dynalite(t testing.TB) string { t.Helper(); return dynalite.get(t) }

// Fauxqs returns the base endpoint of the shared fauxqs server, starting it
// on first use.
func Fauxqs(t testing.TB) string { t.Helper(); return fauxqs.get(t) }

// InstalledDir returns the emulators' directory (see Dir) for a test that
// starts processes of its own (StartDynalite, StartFauxqs), behind the
// same gate as the shared ones: skipped under -short, failed with the make
// target's name when the emulators are not installed.
func InstalledDir(t testing.TB) string {
	t.Helper()
	tool.SkipIfShort(t, "the AWS emulators (dynalite, fauxqs)")
	dir, err := Dir("")
	if err != nil {
		if errors.Is(err, ErrNotInstalled) {
			tool.Missing(t, err)
		}
		t.Fatal(err)
	}
	return dir
}

// DynamoDB returns a DynamoDB client for the shared dynalite server, with
// static dummy credentials and the SDK's standard retryer.
func DynamoDB(t testing.TB) *dynamodb.Client {
	t.Helper()
	ep := Dynalite(t)
	return dynamodb.NewFromConfig(Config(), func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(ep) })
}

// SQS returns an SQS client (JSON protocol) for the shared fauxqs server.
func SQS(t testing.TB) *sqs.Client {
	t.Helper()
	ep := Fauxqs(t)
	return sqs.NewFromConfig(Config(), func(o *sqs.Options) { o.BaseEndpoint = aws.String(ep) })
}

// Queue creates a queue named prefix plus a unique suffix on the shared
// fauxqs server and returns its URL and ARN: what a test of an SQS target
// lists as allowed and then reads from.
func Queue(t testing.TB, prefix string) (url, arn string) {
	t.Helper()
	ctx := context.Background()
	q := SQS(t)
	out, err := q.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(UniqueName(prefix))})
	if err != nil {
		t.Fatalf("create queue: %v", err)
	}
	attrs, err := q.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: out.QueueUrl,
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
	if err != nil {
		t.Fatalf("queue ARN: %v", err)
	}
	return aws.ToString(out.QueueUrl), attrs.Attributes[string(sqstypes.QueueAttributeNameQueueArn)]
}

// Config is the SDK configuration the emulator clients share: a region and
// static dummy credentials, so no test ever reads a real AWS profile.
func Config() aws.Config {
	return aws.Config{
		Region:      Region,
		Credentials: credentials.NewStaticCredentialsProvider("xjob-test", "xjob-test", ""),
	}
}

// Main runs the tests of a package that uses the emulators and stops them
// afterwards: call it from TestMain.
func Main(m *testing.M) {
	code := m.Run()
	Stop()
	os.Exit(code)
}

// Stop ends the emulators this test binary started. It is safe to call
// more than once and when nothing was started.
func Stop() {
	for _, e := range []*shared{dynalite, fauxqs} {
		e.stop()
	}
}

// UniqueName returns a name no other call in this process returns, for
// per-test tables and queues on the shared emulators (letters, digits and
// dashes, as both table and queue names allow).
func UniqueName(prefix string) string {
	mu.Lock()
	defer mu.Unlock()
	seq++
	return fmt.Sprintf("%s-%d-%d", prefix, os.Getpid(), seq)
}

var (
	mu  sync.Mutex
	seq int
)

func (e *shared) get(t testing.TB) string {
	t.Helper()
	tool.SkipIfShort(t, "the AWS emulators (dynalite, fauxqs)")
	e.once.Do(e.run)
	if e.err != nil {
		if e.missing {
			tool.Missing(t, e.err)
		}
		t.Fatal(e.err)
	}
	return e.proc.Endpoint()
}

func (e *shared) run() {
	dir, err := Dir("")
	if err == nil {
		var p *Process
		p, err = e.start(dir, startTimeout)
		e.mu.Lock()
		e.proc = p
		e.mu.Unlock()
	}
	if err != nil {
		e.err, e.missing = fmt.Errorf("emulator: %w", err), errors.Is(err, ErrNotInstalled)
	}
}

func (e *shared) stop() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.proc != nil {
		e.proc.Stop()
		e.proc = nil
	}
}
