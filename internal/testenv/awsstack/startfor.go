package awsstack

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/xjobdev/xjob/internal/testenv/emulator"
	"github.com/xjobdev/xjob/internal/testenv/tool"
)

// StartFor is Start for a test: without the emulators the test fails
// saying how to install them (tool.Missing), any other error fails it,
// and the deployment is closed when the test ends.
func StartFor(t testing.TB, ctx context.Context, opts Options) *Deployment {
	t.Helper()
	d, err := Start(ctx, opts)
	if err != nil {
		if errors.Is(err, emulator.ErrNotInstalled) {
			tool.Missing(t, err)
		}
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	return d
}

// BootstrapsFor builds the functions' bootstraps (functions/*) for a test
// that runs them behind the Lambda Runtime API, into a directory removed
// with the test, and returns it. Without the emulators the test fails
// first, saying how to install them: the bootstraps would have nothing to
// talk to.
func BootstrapsFor(t testing.TB, ctx context.Context) string {
	t.Helper()
	if _, err := emulator.Dir(""); err != nil {
		if errors.Is(err, emulator.ErrNotInstalled) {
			tool.Missing(t, err)
		}
		t.Fatal(err)
	}
	bin := t.TempDir()
	start := time.Now()
	if err := BuildBootstraps(ctx, "", bin); err != nil {
		t.Fatal(err)
	}
	t.Logf("bootstraps built in %s", time.Since(start).Round(time.Millisecond))
	return bin
}
