package lambdaapp_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xjobdev/xjob/internal/adapter/awsconfig"
)

// TestFunctionThatCannotStartSaysWhy runs a real bootstrap with a broken
// configuration: it must exit non-zero before serving, having written
// exactly one log line (JSON, what CloudWatch shows as the init error)
// that names the function and every offending variable.
func TestFunctionThatCannotStartSaysWhy(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "callback")
	build := exec.Command("go", "build", "-tags", "lambda.norpc", "-o", bin, "../../../functions/callback")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), awsconfig.EnvShards + "=0", awsconfig.EnvRetryDelay + "=50ms"}
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if exit, ok := err.(*exec.ExitError); !ok || exit.ExitCode() != 1 {
		t.Fatalf("exit: %v, want status 1\nstdout %s\nstderr %s", err, stdout.String(), stderr.String())
	}
	lines := strings.Split(strings.TrimRight(stdout.String(), "\n"), "\n")
	if len(lines) != 1 || stderr.Len() != 0 {
		t.Fatalf("want one log line on stdout and nothing else, got stdout %q stderr %q", stdout.String(), stderr.String())
	}
	var rec struct{ Level, Msg, Function, Err string }
	if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil {
		t.Fatalf("log line %q: %v", lines[0], err)
	}
	if rec.Level != "ERROR" || rec.Function != "callback" {
		t.Errorf("log line %+v", rec)
	}
	for _, v := range []string{awsconfig.EnvTablePrefix, awsconfig.EnvShards, awsconfig.EnvRetryDelay, awsconfig.EnvAccessTokenParam} {
		if !strings.Contains(rec.Err, v) {
			t.Errorf("the line does not name %s: %s", v, rec.Err)
		}
	}
}
