package awsstack

import (
	"context"
	"errors"
	"testing"

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
