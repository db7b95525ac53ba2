package schedule

import (
	"errors"
	"time"
)

// ParseCron is being written (placeholder until the cron wrapper lands).
func ParseCron(expr string, loc *time.Location) (Schedule, error) {
	return nil, errors.New("cron: not implemented yet")
}
