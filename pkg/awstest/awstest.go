// Package awstest runs the local AWS stand-ins the adapter tests need —
// dynalite for DynamoDB and fauxqs for SQS — and builds SDK clients for
// them. It is imported by tests only.
//
// Each emulator is a Node child process started once per test binary, on
// first use, on a port the OS picks on 127.0.0.1 (the starter scripts in
// test/emulators print "READY <port>"). The processes end when the test
// binary calls Stop (Main does it after m.Run) and, as a safety net, when
// their stdin closes, which happens when the test binary dies however it
// dies.
//
// The emulators are installed from npm with a committed lock file ("make
// emulators", i.e. npm ci --prefix test/emulators). When they are missing a
// test is skipped with that hint, unless the CI environment variable is set:
// then it fails, so a CI run cannot pass while silently testing nothing.
package awstest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// Region is the region every emulator client is built for; the emulators
// accept any region, the SDK needs one to sign.
const Region = "us-east-1"

// startTimeout bounds how long an emulator may take to print READY.
const startTimeout = 30 * time.Second

// emulator is one lazily started child process.
type emulator struct {
	script string // file in test/emulators

	once     sync.Once
	endpoint string
	err      error
	skip     bool // err means "not installed", not "broken"

	mu  sync.Mutex
	cmd *exec.Cmd
	in  io.Closer
}

var (
	dynalite = &emulator{script: "dynalite.js"}
	fauxqs   = &emulator{script: "fauxqs.js"}
)

// Dynalite returns the base endpoint (http://127.0.0.1:port) of the shared
// dynalite server, starting it on first use.
func Dynalite(t testing.TB) string { t.Helper(); return dynalite.get(t) }

// Fauxqs returns the base endpoint of the shared fauxqs server, starting it
// on first use.
func Fauxqs(t testing.TB) string { t.Helper(); return fauxqs.get(t) }

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
	for _, e := range []*emulator{dynalite, fauxqs} {
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

func (e *emulator) get(t testing.TB) string {
	t.Helper()
	e.once.Do(e.start)
	if e.err != nil {
		if e.skip && os.Getenv("CI") == "" {
			t.Skip(e.err.Error())
		}
		t.Fatal(e.err)
	}
	return e.endpoint
}

func (e *emulator) start() {
	dir, err := emulatorDir()
	if err != nil {
		e.err = err
		return
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules")); err != nil {
		e.err, e.skip = fmt.Errorf("awstest: %s is missing: run make emulators (npm ci --prefix test/emulators)", filepath.Join(dir, "node_modules")), true
		return
	}
	node, err := exec.LookPath("node")
	if err != nil {
		e.err, e.skip = fmt.Errorf("awstest: node not found on PATH (Node 20 runs the emulators; then run make emulators): %w", err), true
		return
	}
	cmd := exec.Command(node, e.script, "0")
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		e.err = fmt.Errorf("awstest %s: %w", e.script, err)
		return
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		e.err = fmt.Errorf("awstest %s: %w", e.script, err)
		return
	}
	if err := cmd.Start(); err != nil {
		e.err = fmt.Errorf("awstest %s: start: %w", e.script, err)
		return
	}
	e.mu.Lock()
	e.cmd, e.in = cmd, stdin
	e.mu.Unlock()

	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if port, ok := strings.CutPrefix(sc.Text(), "READY "); ok {
				ready <- port
				break
			}
		}
		_, _ = io.Copy(io.Discard, stdout) // keep the pipe drained
	}()
	select {
	case port := <-ready:
		e.endpoint = "http://127.0.0.1:" + strings.TrimSpace(port)
	case <-time.After(startTimeout):
		e.stop()
		e.err = fmt.Errorf("awstest %s: not ready after %v", e.script, startTimeout)
	}
}

func (e *emulator) stop() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cmd == nil {
		return
	}
	_ = e.in.Close()
	_ = e.cmd.Process.Kill()
	_ = e.cmd.Wait()
	e.cmd = nil
}

// emulatorDir finds test/emulators from the working directory (a package
// directory under go test) by walking up to the module root.
func emulatorDir() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("awstest: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "test", "emulators"), nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("awstest: no go.mod above the working directory")
		}
		dir = parent
	}
}
