// Package httptarget is the built-in executor of target jobs (glue types
// HTTP and AWS, package internal/target): it makes the call a target
// job's spec describes from the scheduler's own process (an AWS job's
// through Config.AWS, internal/adapter/awstarget), and reports the result
// through the same callback path an executor's POST /api/callback takes,
// so retries, alarms, child jobs and the run report treat it as any run.
//
// Per call:
//
//	Start ── spec, secrets or template bad ──▶ trigger fails (retry, alarm)
//	  │ queued per job by its block strategy (SERIAL_EXECUTION queues,
//	  │ DISCARD_LATER refuses while one runs, COVER_EARLY cancels it)
//	  ▼
//	worker slot ──▶ HTTP call (egress rule on every dial, no proxy,
//	  │             cut at the timeout, a redirect never followed with a
//	  │             secret header) ──▶ report: status, first bytes of the body
//	  ▼
//	next queued call of the job
//
// A process that dies mid-call reports nothing: the log stays running
// until the upkeep's lost-result check marks it failed (its address,
// target.Address, is never a live executor), and the call's timeout is
// bounded below that check's delay.
package httptarget

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/egress"
	"github.com/xjobdev/xjob/internal/fallback"
	"github.com/xjobdev/xjob/internal/target"
	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/driver"
	"github.com/xjobdev/xjob/pkg/protocol"
)

// Defaults of Config.
const (
	DefaultWorkers  = 64
	DefaultMaxQueue = 1000
	// maxRedirects bounds the redirects followed by a call without
	// secret headers.
	maxRedirects = 5
	// drainBytes is how much of the rest of a body is read so that the
	// connection can be reused; a longer body closes it.
	drainBytes = 64 << 10
	// reportAttempts and reportPause bound the retries of a report the
	// store refused (it is down): past them the lost-result check takes
	// the log over.
	reportAttempts = 5
	reportPause    = time.Second
)

// Messages of the block strategies, as xxl-job's executors word them.
const (
	msgDiscardLater = "block strategy effect: Discard Later"
	msgCoverEarly   = "block strategy effect: Cover Early [job running, killed]"
	msgKilled       = "job killed"
	msgStopping     = "the scheduler stopped during the call"
)

// Reporter records results as POST /api/callback does:
// (*callback.Service).Callback.
type Reporter func(ctx context.Context, items []protocol.HandleCallbackParam) []error

// Config wires an Executor. Report is required.
type Config struct {
	// Policy is the egress rule every dial obeys (the executors' rule).
	Policy egress.Policy
	// Sealer opens secret headers; nil refuses jobs that have some.
	Sealer *target.Sealer
	Report Reporter
	Clock  clock.Clock
	Logger *slog.Logger
	// Workers bounds concurrent calls (default DefaultWorkers); a call
	// waits for a slot before its timeout starts.
	Workers int
	// MaxQueue bounds the calls one job may have waiting under
	// SERIAL_EXECUTION (default DefaultMaxQueue).
	MaxQueue int
	// DialTimeout bounds connecting (default 10 s, within the call's
	// timeout).
	DialTimeout time.Duration
	// AWS makes AWS jobs' calls (*awstarget.Caller); nil fails them.
	AWS AWSCaller
	// AWSAllow lists the ARNs AWS jobs may call, checked again at each
	// fire so that an ARN the operator removed is no longer called by a
	// job saved before.
	AWSAllow *target.AllowList
}

// AWSCaller makes one AWS job's call, bounded by ctx, and words its
// result for the log; ok false fails the run.
type AWSCaller interface {
	CallAWS(ctx context.Context, r target.AWSRequest) (ok bool, msg string)
}

// Executor runs target calls. It is safe for concurrent use.
type Executor struct {
	cfg    Config
	client *http.Client
	slots  chan struct{}
	base   context.Context
	stop   context.CancelCauseFunc

	mu     sync.Mutex
	jobs   map[int64]*jobState
	closed bool
	wg     sync.WaitGroup
}

// jobState is one job's running call and the calls queued behind it.
type jobState struct {
	running *run
	queue   []*run
}

// run is one call on its way.
type run struct {
	call   target.Call
	req    target.Request
	aws    *target.AWSRequest // an AWS job's call instead of req
	codes  target.Codes
	secret bool
	ctx    context.Context
	cancel context.CancelCauseFunc
}

// New builds an Executor.
func New(cfg Config) (*Executor, error) {
	if cfg.Report == nil {
		return nil, errors.New("httptarget: Report is required")
	}
	cfg.Clock, cfg.Logger = fallback.Clock(cfg.Clock), fallback.Logger(cfg.Logger)
	if cfg.Workers <= 0 {
		cfg.Workers = DefaultWorkers
	}
	if cfg.MaxQueue <= 0 {
		cfg.MaxQueue = DefaultMaxQueue
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = 10 * time.Second
	}
	e := &Executor{cfg: cfg, slots: make(chan struct{}, cfg.Workers), jobs: map[int64]*jobState{}}
	e.base, e.stop = context.WithCancelCause(context.Background())
	transport := &http.Transport{
		// No proxy: the egress rule checks the address dialled, and a
		// proxy would be that address whatever the URL names.
		Proxy:               nil,
		DialContext:         cfg.Policy.Dialer(cfg.DialTimeout).DialContext,
		TLSHandshakeTimeout: cfg.DialTimeout,
		MaxIdleConnsPerHost: cfg.Workers,
		IdleConnTimeout:     90 * time.Second,
		ForceAttemptHTTP2:   true,
	}
	e.client = &http.Client{Transport: transport, CheckRedirect: checkRedirect}
	return e, nil
}

// secretKey marks a request that carries a secret header.
type secretKey struct{}

// errSecretRedirect is the failure of a call whose target redirects while
// it carries a secret header: following would hand the secret to wherever
// the redirect points.
var errSecretRedirect = errors.New("redirect not followed: the call carries a secret header")

func checkRedirect(req *http.Request, via []*http.Request) error {
	if secret, _ := req.Context().Value(secretKey{}).(bool); secret {
		return errSecretRedirect
	}
	if len(via) > maxRedirects {
		return fmt.Errorf("stopped after %d redirects", maxRedirects)
	}
	return nil
}

// Start queues the call of one triggered log and returns at once, as an
// executor's /run does: success means accepted; the result comes through
// Config.Report. A spec, secret or template that cannot be used, or a
// block strategy that refuses the call, fails here.
func (e *Executor) Start(_ context.Context, c target.Call) protocol.ReturnT {
	r, fail := e.prepare(c)
	if fail != "" {
		return protocol.Fail(fail)
	}
	r.ctx, r.cancel = context.WithCancelCause(e.base)

	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		r.cancel(nil)
		return protocol.Fail("HTTP target: " + msgStopping)
	}
	js := e.jobs[c.JobID]
	if js == nil {
		js = &jobState{}
		e.jobs[c.JobID] = js
	}
	busy := js.running != nil || len(js.queue) > 0
	switch xjob.BlockStrategy(c.BlockStrategy) {
	case xjob.BlockDiscardLater:
		if busy {
			r.cancel(nil)
			return protocol.Fail(msgDiscardLater)
		}
	case xjob.BlockCoverEarly:
		if busy {
			e.coverLocked(js)
		}
	default:
		if len(js.queue) >= e.cfg.MaxQueue {
			r.cancel(nil)
			return protocol.Fail(fmt.Sprintf("HTTP target: job %d has %d calls waiting", c.JobID, len(js.queue)))
		}
	}
	if js.running != nil {
		js.queue = append(js.queue, r)
		return protocol.OK()
	}
	js.running = r
	e.launchLocked(r)
	return protocol.OK()
}

// prepare turns c into a run ready to call, or says why it cannot run.
func (e *Executor) prepare(c target.Call) (*run, string) {
	if xjob.GlueType(c.GlueType) == xjob.GlueAWS {
		spec, err := target.ParseAWS(c.Source)
		if err != nil {
			return nil, "AWS target spec: " + err.Error()
		}
		if e.cfg.AWS == nil || e.cfg.AWSAllow == nil {
			return nil, "AWS target: this node has no AWS client (no allowed target ARNs configured)"
		}
		if !e.cfg.AWSAllow.Allows(spec.ARN) {
			return nil, "AWS target: " + spec.ARN + " is no longer an allowed target ARN"
		}
		req, err := spec.Render(c.Vars)
		if err != nil {
			return nil, "AWS target: " + err.Error()
		}
		return &run{call: c, aws: &req}, ""
	}
	spec, err := target.Parse(c.Source)
	if err != nil {
		return nil, "HTTP target spec: " + err.Error()
	}
	secrets, err := e.cfg.Sealer.OpenAll(spec)
	if err != nil {
		return nil, "HTTP target: " + err.Error()
	}
	req, err := spec.Render(c.Vars, secrets)
	if err != nil {
		return nil, "HTTP target: " + err.Error()
	}
	codes, err := target.ParseCodes(spec.SuccessCodes)
	if err != nil {
		return nil, "HTTP target: successCodes: " + err.Error()
	}
	return &run{call: c, req: req, codes: codes, secret: len(secrets) > 0}, ""
}

// Try makes c's call once, now, and returns its result instead of
// reporting it: the console's test call. It takes a worker slot like any
// call and obeys the same timeout, egress rule and redirect rule; it
// bypasses the job's queue and block strategy (no run is started).
func (e *Executor) Try(ctx context.Context, c target.Call) (bool, string) {
	r, fail := e.prepare(c)
	if fail != "" {
		return false, fail
	}
	r.ctx, r.cancel = context.WithCancelCause(ctx)
	defer r.cancel(nil)
	code, msg := e.do(r)
	return code == xjob.CodeSuccess, msg
}

// coverLocked cancels js's running call and drops its queue: each reports
// a failure naming the cover.
func (e *Executor) coverLocked(js *jobState) {
	if js.running != nil {
		js.running.cancel(errors.New(msgCoverEarly))
	}
	for _, q := range js.queue {
		q.cancel(errors.New(msgCoverEarly))
		e.reportAsync(q, xjob.CodeFail, msgCoverEarly)
	}
	js.queue = nil
}

// launchLocked starts r's goroutine; e.mu is held.
func (e *Executor) launchLocked(r *run) {
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		code, msg := e.do(r)
		e.report(r, code, msg)
		e.next(r)
	}()
}

// next starts the call queued behind r, if any.
func (e *Executor) next(r *run) {
	e.mu.Lock()
	defer e.mu.Unlock()
	js := e.jobs[r.call.JobID]
	if js == nil || js.running != r {
		return
	}
	if len(js.queue) == 0 {
		delete(e.jobs, r.call.JobID)
		return
	}
	js.running, js.queue = js.queue[0], js.queue[1:]
	e.launchLocked(js.running)
}

// do makes r's call and returns the result to report.
func (e *Executor) do(r *run) (int, string) {
	select {
	case e.slots <- struct{}{}:
		defer func() { <-e.slots }()
	case <-r.ctx.Done():
		return xjob.CodeFail, cause(r.ctx)
	}
	timeout := time.Duration(target.TimeoutSeconds(r.call.TimeoutSeconds)) * time.Second
	callCtx, cancel := context.WithCancelCause(r.ctx)
	defer cancel(nil)
	go func() {
		// The deadline is the injected clock's, so tests drive it.
		if e.cfg.Clock.SleepUntil(callCtx, e.cfg.Clock.Now().Add(timeout)) == nil {
			cancel(fmt.Errorf("timed out after %v: the call was cut", timeout))
		}
	}()
	if r.aws != nil {
		ok, msg := e.cfg.AWS.CallAWS(callCtx, *r.aws)
		if !ok {
			return xjob.CodeFail, msg
		}
		return xjob.CodeSuccess, msg
	}
	ctx := context.WithValue(callCtx, secretKey{}, r.secret)
	var body io.Reader
	if r.req.Body != "" {
		body = strings.NewReader(r.req.Body)
	}
	req, err := http.NewRequestWithContext(ctx, r.req.Method, r.req.URL, body)
	if err != nil {
		return xjob.CodeFail, "HTTP target: " + err.Error()
	}
	for k, v := range r.req.Header {
		req.Header.Set(k, v)
	}
	if req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", "xjob-http-target")
	}
	started := e.cfg.Clock.Now()
	head := r.req.Method + " " + redactQuery(r.req.URL)
	resp, err := e.client.Do(req)
	took := e.cfg.Clock.Now().Sub(started).Round(time.Millisecond)
	if err != nil {
		if resp != nil && errors.Is(err, errSecretRedirect) {
			return xjob.CodeFail, fmt.Sprintf("HTTP %s · %s · %v\n%s to %s", resp.Status, head, took,
				errSecretRedirect, resp.Header.Get("Location"))
		}
		if ctx.Err() != nil {
			return xjob.CodeFail, fmt.Sprintf("%s · %s", head, cause(ctx))
		}
		return xjob.CodeFail, fmt.Sprintf("%s · %s", head, unwrapURL(err))
	}
	defer resp.Body.Close()
	first := make([]byte, target.ResultBytes)
	n, _ := io.ReadFull(resp.Body, first)
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, drainBytes))
	code := xjob.CodeFail
	if r.codes.Has(resp.StatusCode) {
		code = xjob.CodeSuccess
	}
	msg := fmt.Sprintf("HTTP %s · %s · %v", resp.Status, head, took)
	if n > 0 {
		msg += "\n" + target.Head(first[:n], n == target.ResultBytes)
	}
	return code, msg
}

// redactQuery is the URL as the log shows it: without its query, which
// may carry a token.
func redactQuery(u string) string {
	if i := strings.IndexByte(u, '?'); i >= 0 {
		return u[:i] + "?…"
	}
	return u
}

func unwrapURL(err error) string {
	var ue interface{ Unwrap() error }
	if errors.As(err, &ue) {
		if inner := ue.Unwrap(); inner != nil {
			return inner.Error()
		}
	}
	return err.Error()
}

func cause(ctx context.Context) string {
	if c := context.Cause(ctx); c != nil {
		return c.Error()
	}
	return "cancelled"
}

// report records r's result, retrying while the store refuses it.
func (e *Executor) report(r *run, code int, msg string) {
	item := protocol.HandleCallbackParam{LogID: r.call.LogID, LogDateTim: r.call.TriggerTime, HandleCode: code, HandleMsg: msg}
	ctx := context.WithoutCancel(e.base)
	for attempt := 1; ; attempt++ {
		errs := e.cfg.Report(ctx, []protocol.HandleCallbackParam{item})
		err := errs[0]
		if err == nil || errors.Is(err, xjob.ErrConflict) || errors.Is(err, xjob.ErrNotFound) {
			// Recorded, or a result (a kill) was recorded first.
			return
		}
		var ve *xjob.ValidationError
		if errors.As(err, &ve) || attempt == reportAttempts {
			e.cfg.Logger.Warn("HTTP target: result not recorded", "logId", r.call.LogID, "err", err)
			return
		}
		if e.cfg.Clock.SleepUntil(ctx, e.cfg.Clock.Now().Add(reportPause)) != nil {
			return
		}
	}
}

// reportAsync reports a call that never ran (a covered queue entry)
// without holding the caller.
func (e *Executor) reportAsync(r *run, code int, msg string) {
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		e.report(r, code, msg)
	}()
}

// Kill cancels the job's running call and drops its queue (the admin's
// kill; it records the kill's result itself).
func (e *Executor) Kill(jobID int64) protocol.ReturnT {
	e.mu.Lock()
	defer e.mu.Unlock()
	js := e.jobs[jobID]
	if js == nil {
		return protocol.OK()
	}
	if js.running != nil {
		js.running.cancel(errors.New(msgKilled))
	}
	for _, q := range js.queue {
		q.cancel(errors.New(msgKilled))
		e.reportAsync(q, xjob.CodeFail, msgKilled)
	}
	js.queue = nil
	return protocol.OK()
}

// Busy reports whether the job has a call running or waiting here.
func (e *Executor) Busy(jobID int64) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	js := e.jobs[jobID]
	return js != nil && (js.running != nil || len(js.queue) > 0)
}

// Close cancels every call (each reports a failure saying the scheduler
// stopped, so retries apply) and waits for their reports.
func (e *Executor) Close() {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	e.Shutdown(ctx)
}

// Shutdown refuses new calls, lets the running and queued ones finish
// until ctx ends, then cancels what is left (each reports a failure
// saying the scheduler stopped, so retries apply) and waits for their
// reports.
func (e *Executor) Shutdown(ctx context.Context) {
	e.mu.Lock()
	e.closed = true
	e.mu.Unlock()
	done := e.callsDone()
	select {
	case <-done:
	case <-ctx.Done():
		e.stop(errors.New(msgStopping))
		<-done
	}
	e.stop(errors.New(msgStopping))
	e.client.CloseIdleConnections()
}

// callsDone is closed once every call started so far has ended and
// reported.
func (e *Executor) callsDone() <-chan struct{} {
	done := make(chan struct{})
	go func() {
		e.wg.Wait()
		close(done)
	}()
	return done
}

// Drain waits until every call started so far has ended and its result
// is reported, or until ctx ends: then it cuts the calls still running or
// queued, each failing with cause (so retries apply), and waits for those
// reports. Unlike Shutdown it leaves the executor open: it is how a
// Lambda invocation ends, since Lambda freezes the environment once the
// handler returns and a call left running would hang, unreported, until
// the next invocation thaws it. Start must not run concurrently with
// Drain (a Lambda environment runs one invocation at a time).
func (e *Executor) Drain(ctx context.Context, cause error) {
	done := e.callsDone()
	select {
	case <-done:
		return
	case <-ctx.Done():
	}
	e.mu.Lock()
	for _, js := range e.jobs {
		// A job in the map has a running call, whose goroutine holds the
		// wait group: adding the queued calls' reports to it is safe.
		if js.running != nil {
			js.running.cancel(cause)
		}
		for _, q := range js.queue {
			q.cancel(cause)
			e.reportAsync(q, xjob.CodeFail, cause.Error())
		}
		js.queue = nil
	}
	e.mu.Unlock()
	<-done
}

// Executors is the ExecutorClient of a process that has a built-in
// executor: calls to target.Address are the built-in executor's, every
// other address is Remote's.
type Executors struct {
	Remote driver.ExecutorClient
	Local  *Executor
}

var _ driver.ExecutorClient = Executors{}

// Run starts a target call from a bare trigger (no schedule time: the
// trigger time stands in). Dispatch calls Executor.Start directly.
func (x Executors) Run(ctx context.Context, address string, p protocol.TriggerParam) protocol.ReturnT {
	if address != target.Address {
		return x.Remote.Run(ctx, address, p)
	}
	if !xjob.GlueType(p.GlueType).Target() {
		return protocol.Fail("the built-in executor runs only HTTP and AWS jobs")
	}
	return x.Local.Start(ctx, target.Call{GlueType: p.GlueType, Vars: target.Vars{JobID: p.JobID, LogID: p.LogID, Param: p.ExecutorParams,
		ShardIndex: p.BroadcastIndex, ShardTotal: max(p.BroadcastTotal, 1), ScheduleTime: p.LogDateTime, TriggerTime: p.LogDateTime},
		Source: p.GlueSource, TimeoutSeconds: p.ExecutorTimeout, BlockStrategy: p.ExecutorBlockStrategy})
}

// Beat answers for the built-in executor: it is alive while the process is.
func (x Executors) Beat(ctx context.Context, address string) protocol.ReturnT {
	if address != target.Address {
		return x.Remote.Beat(ctx, address)
	}
	return protocol.OK()
}

// IdleBeat reports the built-in executor busy with the job while a call
// of it runs or waits.
func (x Executors) IdleBeat(ctx context.Context, address string, jobID int64) protocol.ReturnT {
	if address != target.Address {
		return x.Remote.IdleBeat(ctx, address, jobID)
	}
	if x.Local.Busy(jobID) {
		return protocol.Fail("job thread is running or has trigger queue.")
	}
	return protocol.OK()
}

// Kill cancels the job's calls in this process. In a cluster a call runs
// on the node that dispatched it; another node's kill records the result
// but cannot cut that call.
func (x Executors) Kill(ctx context.Context, address string, jobID int64) protocol.ReturnT {
	if address != target.Address {
		return x.Remote.Kill(ctx, address, jobID)
	}
	return x.Local.Kill(jobID)
}

// Log: a target call has no executor log; its result is the log's
// handle message.
func (x Executors) Log(ctx context.Context, address string, p protocol.LogParam) (protocol.LogResult, protocol.ReturnT) {
	if address != target.Address {
		return x.Remote.Log(ctx, address, p)
	}
	return protocol.LogResult{FromLineNum: p.FromLineNum, ToLineNum: 0, IsEnd: true,
			LogContent: "An HTTP or AWS job has no executor log: its result (status and first bytes of the response) is the log's handle message.\n"},
		protocol.OK()
}
