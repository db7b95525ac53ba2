package fallback_test

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/xjobdev/xjob/internal/fallback"
	"github.com/xjobdev/xjob/pkg/clock"
)

func TestClock(t *testing.T) {
	t.Parallel()
	fake := clock.NewFake(time.Unix(1_700_000_000, 0))
	if got := fallback.Clock(fake); got != clock.Clock(fake) {
		t.Errorf("Clock(fake) = %v, want the fake", got)
	}
	if _, ok := fallback.Clock(nil).(clock.Real); !ok {
		t.Errorf("Clock(nil) = %T, want clock.Real", fallback.Clock(nil))
	}
}

func TestLogger(t *testing.T) {
	t.Parallel()
	own := slog.New(slog.NewTextHandler(io.Discard, nil))
	if got := fallback.Logger(own); got != own {
		t.Error("Logger(own) is not own")
	}
	if got := fallback.Logger(nil); got != slog.Default() {
		t.Error("Logger(nil) is not slog.Default()")
	}
}
