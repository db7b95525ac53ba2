package awsstack

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"

	"github.com/xjobdev/xjob/internal/adapter/awsconfig"
	"github.com/xjobdev/xjob/internal/testenv/lambdarun"
)

// MemoryMB is the memory every function is deployed with (the templates'
// MemorySize; infra tests check it), which Lambda bills GB-s at.
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

// startBootstraps prepares one lambdarun.Function per function from
// Options.Bootstraps, with the environment the templates give it plus
// what Lambda adds (region, credentials) and the emulator endpoints
// (AWS_ENDPOINT_URL_<SERVICE>, read by the SDK's default configuration).
// Environments start on the first invocation, as cold starts do.
func (d *Deployment) startBootstraps() error {
	maxEnvs := map[string]int{"scan": 2, "ring": d.opts.RingPollers, "dispatch": d.opts.FastPollers + d.opts.SlowPollers,
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
		}
		keys := make([]string, 0, len(d.vars))
		for k := range d.vars {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			env = append(env, k+"="+d.vars[k])
		}
		r, err := lambdarun.Start(lambdarun.Options{Name: "xjob-" + fn.Name, Path: path, Env: env,
			Max: max(maxEnvs[fn.Name], 1), MemoryMB: MemoryMB, Output: d.opts.BootstrapOutput})
		if err != nil {
			return fmt.Errorf("awsstack bootstraps: %w", err)
		}
		d.runners[fn.Name] = r
	}
	return nil
}
