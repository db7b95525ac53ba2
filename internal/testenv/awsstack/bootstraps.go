package awsstack

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/xjobdev/xjob/internal/adapter/awsconfig"
	"github.com/xjobdev/xjob/internal/testenv/emulator"
	"github.com/xjobdev/xjob/internal/testenv/lambdarun"
)

// MemoryMB is the memory every function is deployed with by default (the
// templates' MemorySize, and the default of the ring's RingMemorySize;
// TestTemplateMemory checks it), which Lambda bills GB-s at.
const MemoryMB = 256

// BuildBootstraps builds the functions' bootstraps for this host into
// dir, one binary per function named by it, as `make build-lambda` builds
// them for arm64 (same tags, no cgo). root is the module root ("" = found
// from the working directory). It takes as long as `go build` does: warm,
// a few seconds.
func BuildBootstraps(ctx context.Context, root, dir string) error {
	if root == "" {
		r, err := moduleRoot()
		if err != nil {
			return err
		}
		root = r
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-tags", "lambda.norpc", "-o", dir+string(filepath.Separator), "./functions/...")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("awsstack build bootstraps: %w\n%s", err, out)
	}
	return nil
}

func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("awsstack module root: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("awsstack module root: no go.mod above %s", dir)
		}
		dir = parent
	}
}

// Secret parameter names of the emulated stack (the templates' defaults).
const (
	AccessTokenParam = "/xjob/access-token"
	AdminTokenParam  = "/xjob/admin-token"
	SessionKeyParam  = "/xjob/session-key"
)

// startSecrets starts moto's server and puts the tokens and a session
// key there as SecureString parameters, as an operator does before
// deploying: the bootstraps get the parameters' names, never the values.
func (d *Deployment) startSecrets(ctx context.Context) error {
	var err error
	if d.moto, err = emulator.StartMoto(d.opts.StartTimeout); err != nil {
		return fmt.Errorf("awsstack secrets: %w", err)
	}
	for name, value := range map[string]string{AccessTokenParam: d.opts.AccessToken, AdminTokenParam: d.opts.AdminToken,
		SessionKeyParam: requestID() + requestID()} {
		if err := d.PutSecret(ctx, name, value); err != nil {
			return err
		}
	}
	return nil
}

// PutSecret sets SSM parameter name to value (SecureString), as `aws ssm
// put-parameter --overwrite` does: a rotation puts "new\nold", then "new".
// Only with Options.Bootstraps (the in-process functions get the tokens
// directly).
func (d *Deployment) PutSecret(ctx context.Context, name, value string) error {
	if d.moto == nil {
		return fmt.Errorf("awsstack secrets: only the bootstraps read SSM parameters")
	}
	c := ssm.NewFromConfig(d.config(), func(o *ssm.Options) { o.BaseEndpoint = aws.String(d.moto.Endpoint()) })
	if _, err := c.PutParameter(ctx, &ssm.PutParameterInput{Name: aws.String(name), Value: aws.String(value),
		Type: ssmtypes.ParameterTypeSecureString, Overwrite: aws.Bool(true)}); err != nil {
		return fmt.Errorf("awsstack secrets: put %s: %w", name, err)
	}
	return nil
}

// dispatchEnvs bounds the dispatch bootstraps running lane events at once.
// Lambda runs an asynchronous event as soon as the function has
// concurrency (the account's pool without a reservation), so the bound is
// the test machine's, not the deployment's: the 25 concurrent batches the
// two lane queues' mappings had (20 fast, 5 slow). Environments start on
// demand, so a test with fewer concurrent events starts fewer.
const dispatchEnvs = 25

// startBootstraps prepares one lambdarun.Function per function from
// Options.Bootstraps, with the environment the templates give it plus
// what Lambda adds (region, credentials) and the emulator endpoints
// (AWS_ENDPOINT_URL_<SERVICE>, read by the SDK's default configuration).
// The tokens are read from moto's SSM Parameter Store (startSecrets).
// Environments start on the first invocation, as cold starts do.
func (d *Deployment) startBootstraps(ctx context.Context) error {
	if err := d.startSecrets(ctx); err != nil {
		return err
	}
	maxEnvs := map[string]int{"scan": 2, "ring": d.opts.RingPollers, "dispatch": dispatchEnvs + d.opts.ResultsPollers,
		"callback": 16, "registry": 8, "web": 8}
	for _, fn := range awsconfig.Functions {
		path := filepath.Join(d.opts.Bootstraps, fn.Name)
		if _, err := os.Stat(path); err != nil {
			return fmt.Errorf("awsstack bootstraps: %w (run BuildBootstraps)", err)
		}
		env := []string{
			"AWS_REGION=" + Region, "AWS_DEFAULT_REGION=" + Region,
			"AWS_ACCESS_KEY_ID=xjob-awsstack", "AWS_SECRET_ACCESS_KEY=xjob-awsstack",
			// No real profile may ever be read.
			"AWS_CONFIG_FILE=" + os.DevNull, "AWS_SHARED_CREDENTIALS_FILE=" + os.DevNull, "AWS_EC2_METADATA_DISABLED=true",
			"AWS_ENDPOINT_URL_DYNAMODB=" + d.dynalite.Endpoint(),
			"AWS_ENDPOINT_URL_SQS=" + d.fauxqs.Endpoint(), "AWS_ENDPOINT_URL_SNS=" + d.fauxqs.Endpoint(),
			"AWS_ENDPOINT_URL_SSM=" + d.moto.Endpoint(), "AWS_ENDPOINT_URL_LAMBDA=" + d.lambdaURL,
			awsconfig.EnvAccessTokenParam + "=" + AccessTokenParam, awsconfig.EnvAdminTokenParam + "=" + AdminTokenParam,
			awsconfig.EnvSessionKeyParam + "=" + SessionKeyParam,
		}
		if d.opts.SecretsRefresh > 0 {
			env = append(env, awsconfig.EnvSecretsRefresh+"="+d.opts.SecretsRefresh.String())
		}
		keys := make([]string, 0, len(d.vars))
		for k := range d.vars {
			if k != awsconfig.EnvAccessToken && k != awsconfig.EnvAdminToken { // no token in a function's environment
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			env = append(env, k+"="+d.vars[k])
		}
		mem := MemoryMB
		if m := d.opts.BootstrapMemory[fn.Name]; m > 0 {
			mem = m
		}
		var share float64
		if d.opts.CPUShare && mem < VCPUMemoryMB {
			share = float64(mem) / VCPUMemoryMB
		}
		r, err := lambdarun.Start(lambdarun.Options{Name: "xjob-" + fn.Name, Path: path, Env: env,
			Max: max(maxEnvs[fn.Name], 1), MemoryMB: mem, CPUShare: share, Output: d.opts.BootstrapOutput})
		if err != nil {
			return fmt.Errorf("awsstack bootstraps: %w", err)
		}
		d.runners[fn.Name] = r
	}
	return nil
}

// MeasureInit measures each function's init duration on a cold start —
// from its bootstrap process's start to its first request for an
// invocation, what Lambda bills as Init for a provided runtime — with
// the real bootstraps of opts.Bootstraps (BuildBootstraps) against a
// deployment of their own (emulators and moto's SSM, whose
// GetParameters every function's Init makes), and the CPU time each
// Init used (lambdarun.Function.InitCPU). It invokes each function
// once with an event that does no work (no records, no route, an
// EventBridge tick for the scheduled ones); the invocations' own results
// do not matter. The durations are one cold start each, on whatever else
// the machine runs.
func MeasureInit(ctx context.Context, opts Options) (init, cpu map[string]time.Duration, err error) {
	if opts.Bootstraps == "" {
		return nil, nil, fmt.Errorf("awsstack measure init: no Bootstraps directory")
	}
	opts.NoMaintenance = true
	d, err := Start(ctx, opts)
	if err != nil {
		return nil, nil, err
	}
	defer d.Close()
	events := map[string][]byte{
		"ring": []byte(`{"Records":[]}`), "dispatch": []byte(`{"Records":[]}`),
		"callback": []byte(`{"rawPath":"/healthz","requestContext":{"http":{"method":"GET","path":"/healthz"}}}`),
		"web":      []byte(`{"rawPath":"/healthz","requestContext":{"http":{"method":"GET","path":"/healthz"}}}`),
	}
	ev, err := json.Marshal(scheduledEvent(time.Now()))
	if err != nil {
		return nil, nil, fmt.Errorf("awsstack measure init: %w", err)
	}
	events["registry"] = ev
	init, cpu = map[string]time.Duration{}, map[string]time.Duration{}
	for _, fn := range awsconfig.Functions {
		r := d.runners[fn.Name]
		if p, ok := events[fn.Name]; ok && len(r.InitDurations()) == 0 {
			_, _ = d.Invoke(ctx, fn.Name, fn.Name, p) // its Init is what counts
		}
		if fn.Name == "scan" { // the schedule's first tick started it
			deadline := time.Now().Add(30 * time.Second)
			for len(r.InitDurations()) == 0 && time.Now().Before(deadline) {
				time.Sleep(50 * time.Millisecond)
			}
		}
		if ds := r.InitDurations(); len(ds) > 0 {
			init[fn.Name] = ds[0]
		}
		if cs := r.InitCPU(); len(cs) > 0 {
			cpu[fn.Name] = cs[0]
		}
	}
	return init, cpu, nil
}
