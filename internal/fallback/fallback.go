// Package fallback holds the defaults every service applies to the two
// dependencies they all take, a clock and a logger, so that "a nil Clock
// is the wall clock, a nil Logger is slog.Default()" is one rule written
// once rather than a block repeated in each constructor. Tests pass a
// clock.Fake and their own logger; production wiring may leave both nil.
package fallback

import (
	"log/slog"

	"github.com/xjobdev/xjob/pkg/clock"
)

// Clock returns c, or the wall clock when c is nil.
func Clock(c clock.Clock) clock.Clock {
	if c == nil {
		return clock.Real{}
	}
	return c
}

// Logger returns l, or slog.Default() when l is nil. It is read when the
// service is built: a later slog.SetDefault does not reach it.
func Logger(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.Default()
	}
	return l
}
