package admin

import (
	"context"

	"github.com/xjobdev/xjob/internal/scheduler/upkeep"
)

// ResumeChanges finishes or undoes a change set an apply left half-written
// when its process died (upkeep.ResumeChanges); it reports whether it ran
// (not when an apply or a child edit holds the apply's lease).
func (s *Service) ResumeChanges(ctx context.Context) (bool, error) {
	return upkeep.ResumeChanges(ctx, s.cfg.Store, s.cfg.Clock, s.cfg.Logger)
}
