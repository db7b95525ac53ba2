package upkeep

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/driver"
)

// ResumeStore is what ResumeChanges needs of a store.
type ResumeStore interface {
	driver.LeaseStore
	driver.ChangeStore
}

// changePending is a store that can tell, with a read, whether a change
// set awaits ChangeResume (dynamostore): then an idle deployment's
// periodic resume costs that read, not the lease's writes. A set being
// staged right then is its apply's, which resumes first anyway.
type changePending interface {
	ChangePending(ctx context.Context) (bool, error)
}

// resumeLeaseTTL bounds how long a resume that died holds the apply's
// lease (driver.ChangeLease), as an apply's own hold is bounded.
const resumeLeaseTTL = 30 * time.Second

// ResumeChanges finishes or undoes the change set an apply left in st when
// its process died in the middle (driver.ChangeStore): a set past its
// commit point is written to the end, one before it is removed. On
// DynamoDB such a set is half-written, for every reader, until it is
// resumed; so besides each apply, the web function resumes as it starts
// and the registry function's maintenance every minute (Service.Resume).
//
// It takes the apply's lease once, without waiting: if the lease is held,
// an apply (which resumes first) or a child edit is running, and the
// caller's next run tries again. It reports whether it ran: false only when
// the lease was held.
func ResumeChanges(ctx context.Context, st ResumeStore, clk clock.Clock, log *slog.Logger) (bool, error) {
	if p, ok := st.(changePending); ok {
		pending, err := p.ChangePending(ctx)
		if err != nil {
			return false, fmt.Errorf("resume changes: %w", err)
		}
		if !pending {
			return true, nil // nothing to resume: no lease taken
		}
	}
	var id [8]byte
	_, _ = rand.Read(id[:]) // crypto/rand.Read never fails (Go ≥ 1.24)
	l, err := st.LeaseAcquire(ctx, driver.LeaseAcquireParams{Name: driver.ChangeLease, Owner: "resume-" + hex.EncodeToString(id[:]),
		Now: clock.Millis(clk), TTL: resumeLeaseTTL})
	if errors.Is(err, xjob.ErrLeaseHeld) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("resume changes: take the apply lease: %w", err)
	}
	defer func() {
		if err := st.LeaseRelease(context.WithoutCancel(ctx), l); err != nil {
			log.LogAttrs(ctx, slog.LevelWarn, "apply lease not released after resume", slog.String("err", err.Error()))
		}
	}()
	if err := st.ChangeResume(ctx); err != nil {
		return false, fmt.Errorf("resume changes: %w", err)
	}
	return true, nil
}

// Resume is ResumeChanges on the service's store.
func (s *Service) Resume(ctx context.Context) (bool, error) {
	return ResumeChanges(ctx, s.cfg.Store, s.cfg.Clock, s.cfg.Logger)
}
