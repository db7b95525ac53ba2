package dispatch

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/pkg/driver"
)

// Disposition is what a queue consumer does with a task after Dispatch:
// acknowledge it, or leave it to come back after RetryAfter.
type Disposition struct {
	Ack        bool
	RetryAfter time.Duration
}

// Dispose classes Dispatch's error for a queue consumer (the local lane
// workers here, the SQS event source's BatchItemFailures on AWS):
// malformed tasks are dropped, an occurrence in flight elsewhere comes back
// after InFlightRetry (default the claim TTL), store failures come back
// with a growing delay.
func (d *Dispatcher) Dispose(err error, receives int) Disposition {
	var verr *xjob.ValidationError
	switch {
	case err == nil, errors.As(err, &verr):
		return Disposition{Ack: true}
	case errors.Is(err, ErrInFlight):
		return Disposition{RetryAfter: d.cfg.InFlightRetry}
	default:
		backoff := time.Duration(1<<min(receives, 6)) * time.Second
		return Disposition{RetryAfter: backoff}
	}
}

// ServeOptions tune Serve. Zero values take the documented defaults.
type ServeOptions struct {
	// Workers bounds concurrent dispatches on the lane (default 32): the
	// lane's thread pool in xxl-job's terms.
	Workers int
	// Visibility hides a task while it is dispatched (default 60 s).
	Visibility time.Duration
	// Wait is the receive long-poll (default 1 s).
	Wait time.Duration
}

// Serve consumes one dispatch lane until ctx ends: the local-mode worker
// pool. On AWS the SQS event source feeds DispatchMany instead. Each
// receive is one batch (DispatchMany: one claim, one record, one ack).
func (d *Dispatcher) Serve(ctx context.Context, q driver.Queue[fire.DispatchTask], o ServeOptions) error {
	if o.Workers == 0 {
		o.Workers = 32
	}
	if o.Visibility == 0 {
		o.Visibility = 60 * time.Second
	}
	if o.Wait == 0 {
		o.Wait = time.Second
	}
	sem := make(chan struct{}, o.Workers) // one slot per task in flight
	var wg sync.WaitGroup
	defer wg.Wait()
	for ctx.Err() == nil {
		// Wait for a free worker before receiving, so tasks are not
		// hidden while nobody can run them.
		select {
		case sem <- struct{}{}:
			<-sem
		case <-ctx.Done():
			return nil
		}
		free := max(o.Workers-len(sem), 1)
		ds, err := q.Receive(ctx, driver.ReceiveParams{Max: min(free, serveBatch), Visibility: o.Visibility, Wait: o.Wait})
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			d.cfg.Logger.ErrorContext(ctx, "dispatch receive", "err", err)
			_ = d.cfg.Clock.SleepUntil(ctx, d.cfg.Clock.Now().Add(time.Second))
			continue
		}
		if len(ds) == 0 {
			continue
		}
		for range ds {
			sem <- struct{}{}
		}
		wg.Go(func() {
			defer func() {
				for range ds {
					<-sem
				}
			}()
			d.handle(ctx, q, ds)
		})
	}
	return nil
}

// serveBatch caps the tasks Serve receives, and dispatches, at once.
const serveBatch = 100

func (d *Dispatcher) handle(ctx context.Context, q driver.Queue[fire.DispatchTask], ds []driver.Delivery[fire.DispatchTask]) {
	tasks := make([]fire.DispatchTask, len(ds))
	for i, del := range ds {
		tasks[i] = del.Msg
	}
	outs, errs := d.DispatchMany(ctx, tasks)
	if ctx.Err() != nil {
		return // shutting down: the tasks come back after their visibility timeout
	}
	bg := context.WithoutCancel(ctx)
	var acks []string
	for i, del := range ds {
		if err := errs[i]; err != nil {
			d.cfg.Logger.WarnContext(ctx, "dispatch", "job", del.Msg.Occurrence.JobID, "err", err, "receives", del.Receives)
		} else if outs[i].Dropped {
			d.cfg.Logger.DebugContext(ctx, "dispatch dropped", "job", del.Msg.Occurrence.JobID, "reason", outs[i].Reason)
		}
		if disp := d.Dispose(errs[i], del.Receives); disp.Ack {
			acks = append(acks, del.Token)
		} else if err := q.Retry(bg, del.Token, disp.RetryAfter); err != nil {
			d.cfg.Logger.ErrorContext(ctx, "dispatch retry", "err", err)
		}
	}
	if len(acks) > 0 {
		if err := q.Ack(bg, acks); err != nil {
			d.cfg.Logger.ErrorContext(ctx, "dispatch ack", "err", err)
		}
	}
}
