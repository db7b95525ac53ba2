// Package targets builds the built-in executor of HTTP and AWS jobs for
// the functions that fire them (ring and dispatch) or make their test
// call (web), as local mode builds it, and ends those functions'
// invocations with the calls they started done and recorded. It is a
// package of its own so that the functions that fire nothing (scan,
// callback, registry) link neither the executor nor the AWS SDK clients
// of the targets.
package targets

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/xjobdev/xjob/internal/adapter/awstarget"
	"github.com/xjobdev/xjob/internal/adapter/httptarget"
	"github.com/xjobdev/xjob/internal/app/lambdaapp/wiring"
	"github.com/xjobdev/xjob/internal/scheduler/callback"
	"github.com/xjobdev/xjob/internal/target"
	"github.com/xjobdev/xjob/pkg/protocol"
)

// Executor is the built-in executor of one execution environment and the
// results its calls reported during the current invocation, recorded
// together when the invocation ends (Drain).
type Executor struct {
	*httptarget.Executor
	b  *wiring.Base
	cb *callback.Service

	mu      sync.Mutex
	pending []callback.Recorded // one per result, with the time it came
}

// New is the built-in executor: secret headers opened with the key the
// web function seals them with (Sealer), every HTTP call under the
// executors' address rule (wiring.Config.Egress), AWS calls only to the
// ARNs of wiring.Config.AWSTargets (XJOB_AWS_TARGET_ARNS), with the
// function's role. workers bounds the calls one invocation makes at once.
// Results are recorded through cb, all of an invocation's at once: a
// function that fires targets ends each invocation with Drain.
func New(b *wiring.Base, cb *callback.Service, workers int) (*Executor, error) {
	fail := func(err error) (*Executor, error) {
		return nil, fmt.Errorf("lambda %s: targets: %w", b.Config.Function, err)
	}
	sealer, err := Sealer(b)
	if err != nil {
		// As in local mode: a session key too short to derive from leaves
		// HTTP jobs without secret headers (those that have some fail, and
		// are refused at save) rather than the function down.
		b.Log.Warn("HTTP jobs: no key for secret headers; jobs that have some are refused", "err", err)
		sealer = nil
	}
	x := &Executor{b: b, cb: cb}
	cfg := httptarget.Config{Policy: b.Config.Egress, Sealer: sealer, Report: x.gather, Clock: b.Clock, Logger: b.Log, Workers: workers}
	if allow := b.Config.AWSTargets; allow.Len() > 0 {
		if b.Deps.TargetAWS == nil {
			return fail(errors.New("AWS target ARNs are listed but the function has no AWS configuration"))
		}
		cfg.AWS = awstarget.New(awstarget.Config{AWS: *b.Deps.TargetAWS, Endpoints: b.Deps.TargetEndpoints, Clock: b.Clock})
		cfg.AWSAllow = &allow
	}
	if x.Executor, err = httptarget.New(cfg); err != nil {
		return fail(err)
	}
	return x, nil
}

// Sealer seals and opens HTTP jobs' secret headers with a key derived
// from the session key (wiring.Base.SessionKey, its own SSM parameter):
// the web function seals them at save, the dispatchers open them at each
// fire, and no token holder can read them.
func Sealer(b *wiring.Base) (*target.Sealer, error) {
	sealer, err := target.NewSealer(b.SessionKey())
	if err != nil {
		return nil, fmt.Errorf("secret headers: %w", err)
	}
	return sealer, nil
}

// gather is the executor's Reporter: it keeps a result for the
// invocation's end. Recorded one by one, each result would read and
// rewrite its log page (a page holds a shard's fire second, hundreds of
// logs at a busy second); recorded together, a page is written once per
// invocation (callback.Service.Apply), as the results queue's batches
// write executors' results.
func (x *Executor) gather(_ context.Context, items []protocol.HandleCallbackParam) []error {
	at := x.b.Clock.Now().UnixMilli()
	x.mu.Lock()
	x.pending = append(x.pending, callback.Recorded{At: at, Items: items})
	x.mu.Unlock()
	return make([]error, len(items))
}

// drainMargin is what Drain leaves of an invocation's time for what
// follows the calls: recording their results, and the report counters'
// flush (≤ 2 s, wiring.Base.FlushReports).
const drainMargin = 3 * time.Second

// recordAttempts and recordPause bound the retries of results the store
// refused (a throttle): past them the lost-result check takes the logs
// over.
const (
	recordAttempts = 3
	recordPause    = 200 * time.Millisecond
)

// Drain ends an invocation of a function that fires target jobs: it waits
// for every call the invocation started to end — Lambda freezes the
// environment once the handler returns, so a call left running would
// hang until the next invocation thaws it — until drainMargin before
// ctx's deadline (the function's timeout), then records all their
// results at once. Calls still running at that point are cut and fail
// with a message that says so, and their retries apply: on AWS a target
// call lasts at most about the timeout of the function that fires it,
// whatever the job's own timeout.
func (x *Executor) Drain(ctx context.Context) {
	dctx := context.WithoutCancel(ctx)
	if deadline, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		dctx, cancel = context.WithDeadline(dctx, deadline.Add(-drainMargin))
		defer cancel()
	}
	x.Executor.Drain(dctx, fmt.Errorf("cut: the %s function's invocation was about to reach its timeout, "+
		"and on AWS a target call must end within the timeout of the function that fires it", x.b.Config.Function))
	x.record(context.WithoutCancel(ctx))
}

// record applies the results gathered, retrying those the store refused.
func (x *Executor) record(ctx context.Context) {
	x.mu.Lock()
	recs := x.pending
	x.pending = nil
	x.mu.Unlock()
	for attempt := 1; len(recs) > 0; attempt++ {
		retry := x.cb.Apply(ctx, recs)
		var again []callback.Recorded
		for i, r := range retry {
			if r {
				again = append(again, recs[i])
			}
		}
		recs = again
		if len(recs) == 0 {
			return
		}
		if attempt == recordAttempts {
			x.b.Log.WarnContext(ctx, "HTTP and AWS jobs: results not recorded; the lost-result check will fail their runs", "results", len(recs))
			return
		}
		if x.b.Clock.SleepUntil(ctx, x.b.Clock.Now().Add(recordPause)) != nil {
			return
		}
	}
}
