package executor

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/pkg/protocol"
)

// Messages xxl-job's executor writes verbatim (JobThread, ExecutorBizImpl,
// XxlJobExecutor). They are executor-side only, so they live here rather
// than in protocol.
const (
	reasonKill         = "scheduling center kill job."
	reasonCoverEarly   = "block strategy effect：Cover Early"
	reasonReplace      = "change jobhandler or glue type, and terminate the old job thread."
	reasonShutdown     = "web container destroy and kill the job."
	reasonIdle         = "excutor idel times over limit."
	suffixRunKilled    = " [job running, killed]"
	suffixQueuedKilled = " [job not executed, in the job queue, killed.]"
	msgTimeout         = "job execute timeout "
	msgResultLost      = "job handle result lost."
	maxHandleMsg       = 50000
)

var (
	errKilled  = errors.New("job killed")
	errTimeout = errors.New("job timeout")
)

// blockAction is what to do with a trigger for a job that already has a worker.
type blockAction int

const (
	blockEnqueue blockAction = iota // append to the worker's FIFO queue
	blockDiscard                    // refuse the new trigger (500)
	blockCover                      // stop the worker, start a fresh one for the new trigger
)

// decideBlock is xxl-job's block strategy as a pure function of the
// strategy name and whether the job's worker is running or has queued
// triggers. An unknown or empty strategy behaves as SERIAL_EXECUTION.
func decideBlock(strategy string, busy bool) blockAction {
	if !busy {
		return blockEnqueue
	}
	switch xjob.BlockStrategy(strategy) {
	case xjob.BlockDiscardLater:
		return blockDiscard
	case xjob.BlockCoverEarly:
		return blockCover
	default:
		return blockEnqueue
	}
}

// worker is the JobThread of one job id: a FIFO queue run one trigger at a
// time. All fields below entry are guarded by Executor.mu.
type worker struct {
	e     *Executor
	jobID int64
	entry *handlerEntry

	queue      []*protocol.TriggerParam
	running    *protocol.TriggerParam
	cancelRun  context.CancelCauseFunc
	cancelIdle context.CancelFunc
	stopped    bool
	stopReason string
	lastActive time.Time

	inited atomic.Bool // init succeeded; destroy is due when the worker ends
}

func (w *worker) busyLocked() bool { return w.running != nil || len(w.queue) > 0 }

func (w *worker) queuedLocked(logID int64) bool {
	for _, t := range w.queue {
		if t.LogID == logID {
			return true
		}
	}
	return false
}

func (w *worker) enqueueLocked(tp *protocol.TriggerParam) {
	w.queue = append(w.queue, tp)
	if w.cancelIdle != nil {
		w.cancelIdle()
	}
}

// stopLocked flags the worker to stop: the running trigger's context is
// cancelled (reported "[job running, killed]") and queued triggers are
// reported "[job not executed, ...]". The caller removes it from the map.
func (w *worker) stopLocked(reason string) {
	if w.stopped {
		return
	}
	w.stopped = true
	w.stopReason = reason
	if w.cancelRun != nil {
		w.cancelRun(errKilled)
	}
	if w.cancelIdle != nil {
		w.cancelIdle()
	}
}

func (w *worker) loop() {
	e := w.e
	defer func() {
		w.destroy()
		e.workerExited(w)
		e.workerWG.Done()
	}()
	for {
		e.mu.Lock()
		if w.stopped {
			queued, reason := w.queue, w.stopReason
			w.queue = nil
			e.mu.Unlock()
			for _, tp := range queued {
				e.cb.push(callbackOf(tp, xjob.CodeFail, reason+suffixQueuedKilled))
			}
			return
		}
		if len(w.queue) > 0 {
			tp := w.queue[0]
			w.queue = w.queue[1:]
			w.running = tp
			ctx, cancel := context.WithCancelCause(context.Background())
			w.cancelRun = cancel
			e.mu.Unlock()

			res := e.execute(ctx, w.entry, tp, time.Time{}, w.initOnce, w.reason)
			cancel(nil)

			e.mu.Lock()
			w.running, w.cancelRun = nil, nil
			w.lastActive = e.clock.Now()
			e.mu.Unlock()
			e.cb.push(res)
			continue
		}
		if e.closed {
			if e.workers[w.jobID] == w {
				delete(e.workers, w.jobID)
			}
			w.stopped, w.stopReason = true, reasonShutdown
			e.mu.Unlock()
			return
		}
		deadline := w.lastActive.Add(e.cfg.IdleTimeout)
		idle, cancelIdle := context.WithCancel(context.Background())
		w.cancelIdle = cancelIdle
		e.mu.Unlock()

		err := e.clock.SleepUntil(idle, deadline)
		cancelIdle()

		e.mu.Lock()
		w.cancelIdle = nil
		if err == nil && !w.stopped && !w.busyLocked() && !e.clock.Now().Before(deadline) {
			if e.workers[w.jobID] == w {
				delete(e.workers, w.jobID)
			}
			w.stopped, w.stopReason = true, reasonIdle
			e.mu.Unlock()
			return
		}
		e.mu.Unlock()
	}
}

func (w *worker) reason() string {
	w.e.mu.Lock()
	defer w.e.mu.Unlock()
	return w.stopReason
}

func (w *worker) initOnce(ctx context.Context) error {
	if w.inited.Load() {
		return nil
	}
	if w.entry.init != nil {
		if err := w.entry.init(ctx); err != nil {
			return err
		}
	}
	w.inited.Store(true)
	return nil
}

func (w *worker) destroy() {
	if !w.inited.Load() || w.entry.destroy == nil {
		return
	}
	if err := w.entry.destroy(context.Background()); err != nil {
		w.e.log.Warn("executor handler destroy failed", "handler", w.entry.name, "jobId", w.jobID, "err", err)
	}
}

func callbackOf(tp *protocol.TriggerParam, code int, msg string) protocol.HandleCallbackParam {
	if len(msg) > maxHandleMsg {
		msg = msg[:maxHandleMsg] + "..."
	}
	return protocol.HandleCallbackParam{LogID: tp.LogID, LogDateTim: tp.LogDateTime, HandleCode: code, HandleMsg: msg}
}

// execute runs one trigger to its result. The run ends when the handler
// returns, when executorTimeout (or deadline, if earlier) passes on the
// executor's clock (502), or when parent is cancelled with errKilled (500
// with killReason() and "[job running, killed]"). It does not wait for a
// handler that ignores its context.
func (e *Executor) execute(parent context.Context, entry *handlerEntry, tp *protocol.TriggerParam,
	deadline time.Time, initHook func(context.Context) error, killReason func() string) protocol.HandleCallbackParam {
	start := e.clock.Now()
	rl := e.logs.open(tp.LogDateTime, tp.LogID)
	job := &Job{
		JobID: tp.JobID, LogID: tp.LogID, LogDateTime: time.UnixMilli(tp.LogDateTime),
		Handler: entry.name, Param: tp.ExecutorParams,
		ShardIndex: tp.BroadcastIndex, ShardTotal: tp.BroadcastTotal,
		Timeout: time.Duration(tp.ExecutorTimeout) * time.Second,
		log:     rl, now: e.now, code: xjob.CodeSuccess,
	}
	job.Logf("----------- xjob job execute start -----------")
	job.Logf("----------- Param:%s", tp.ExecutorParams)

	ctx, cancel := context.WithCancelCause(parent)
	defer cancel(nil)
	if job.Timeout > 0 {
		if t := start.Add(job.Timeout); deadline.IsZero() || t.Before(deadline) {
			deadline = t
		}
	}
	if !deadline.IsZero() {
		go func() {
			if e.clock.SleepUntil(ctx, deadline) == nil {
				cancel(errTimeout)
			}
		}()
	}

	done := make(chan error, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- fmt.Errorf("panic: %v\n%s", r, debug.Stack())
			}
		}()
		if err := initHook(ctx); err != nil {
			done <- fmt.Errorf("job handler [%s] init failed: %w", entry.name, err)
			return
		}
		done <- entry.fn(ctx, job)
	}()

	var (
		err      error
		finished bool
	)
	select {
	case err = <-done:
		finished = true
	case <-ctx.Done():
	}

	code, msg := job.result()
	switch cause := context.Cause(ctx); {
	case (!finished || err != nil) && errors.Is(cause, errTimeout):
		job.Logf("----------- xjob job execute timeout")
		code, msg = xjob.CodeTimeout, msgTimeout
	case (!finished || err != nil) && errors.Is(cause, errKilled):
		reason := killReason()
		job.Logf("----------- JobThread toStop, stopReason:%s", reason)
		code, msg = xjob.CodeFail, reason+suffixRunKilled
	case !finished:
		code, msg = xjob.CodeFail, "job execute interrupted: "+cause.Error()
	case err != nil:
		code, msg = xjob.CodeFail, err.Error()
	case code <= 0:
		code, msg = xjob.CodeFail, msgResultLost
	}
	job.Logf("----------- xjob job execute end(finish) -----------")
	job.Logf("----------- Result: handleCode=%d, handleMsg = %s", code, msg)
	return callbackOf(tp, code, msg)
}
