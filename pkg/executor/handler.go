package executor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/xjobdev/xjob"
)

// HandlerFunc is a job's code, the analogue of a method annotated with
// @XxlJob. Returning nil reports success (200) unless the Job's result
// helpers said otherwise; returning an error reports failure (500) with the
// error text. ctx is cancelled when the trigger times out (502) or is
// killed by the admin, by COVER_EARLY or by shutdown; handlers must return
// promptly then, because the executor reports the run finished at once and
// does not wait for a handler that ignores ctx.
type HandlerFunc func(ctx context.Context, job *Job) error

// HookFunc is an init or destroy hook of a handler.
type HookFunc func(ctx context.Context) error

// HandlerOption configures a handler at registration.
type HandlerOption func(*handlerEntry)

// WithInit runs fn before the first trigger a job worker executes with
// this handler (like @XxlJob(init=...), which runs when the JobThread
// starts). If it fails the trigger fails with 500 and the next trigger
// tries again.
func WithInit(fn HookFunc) HandlerOption { return func(h *handlerEntry) { h.init = fn } }

// WithDestroy runs fn when a job worker that ran init ends: reaped after
// idling, killed, replaced, or at shutdown (like @XxlJob(destroy=...)).
func WithDestroy(fn HookFunc) HandlerOption { return func(h *handlerEntry) { h.destroy = fn } }

// WithJob declares the handler's default job: when the executor starts
// (with an AppName and admin addresses) it sends the declarations of all
// its handlers to the admin, which creates each job once, stopped unless
// the operator lets declared jobs start, keyed by d.Name or by
// "<appname>.<handler>". Afterwards the job belongs to the people who edit
// it in the admin: a changed declaration is recorded there (`xjob job
// show` lists what differs) but never overwrites the job. d.Handler may be
// left empty; it is the handler's name. An xxl-job admin does not know
// declarations: the executor then logs one line and runs as usual.
func WithJob(d xjob.JobDeclaration) HandlerOption {
	return func(h *handlerEntry) { h.decl = &d }
}

type handlerEntry struct {
	name    string
	fn      HandlerFunc
	init    HookFunc
	destroy HookFunc
	decl    *xjob.JobDeclaration
}

// Register adds a handler under name, the JobHandler name configured on
// the job in the admin. Names are unique.
func (e *Executor) Register(name string, fn HandlerFunc, opts ...HandlerOption) error {
	if name == "" {
		return errors.New("executor register: empty handler name")
	}
	if fn == nil {
		return fmt.Errorf("executor register %q: nil handler", name)
	}
	h := &handlerEntry{name: name, fn: fn}
	for _, o := range opts {
		o(h)
	}
	if d := h.decl; d != nil {
		switch d.Handler {
		case "":
			d.Handler = name
		case name:
		default:
			return fmt.Errorf("executor register %q: the declared job names handler %q", name, d.Handler)
		}
		if e.cfg.AppName == "" {
			return fmt.Errorf("executor register %q: a declared job needs Config.AppName (its group)", name)
		}
		if err := d.Validate(e.cfg.AppName); err != nil {
			return fmt.Errorf("executor register %q: declared job: %w", name, err)
		}
	}
	e.hmu.Lock()
	defer e.hmu.Unlock()
	if _, dup := e.handlers[name]; dup {
		return fmt.Errorf("executor register %q: %w", name, xjob.ErrConflict)
	}
	e.handlers[name] = h
	return nil
}

func (e *Executor) handler(name string) *handlerEntry {
	e.hmu.RLock()
	defer e.hmu.RUnlock()
	return e.handlers[name]
}

// Job is what a handler knows about the trigger it runs, and how it writes
// the per-run log the admin shows and sets its result.
type Job struct {
	// JobID is the admin's job id (xxl_job_info.id).
	JobID int64
	// LogID is the id of this trigger's log row; it names the log file.
	LogID int64
	// LogDateTime is the trigger time the admin recorded.
	LogDateTime time.Time
	// Handler is the JobHandler name.
	Handler string
	// Param is the job parameter (executorParams).
	Param string
	// ShardIndex and ShardTotal are the broadcast shard (0 and 1 when not
	// broadcasting).
	ShardIndex, ShardTotal int
	// Timeout is the job's executorTimeout (0 = none).
	Timeout time.Duration

	log    *runLog
	now    func() time.Time
	mu     sync.Mutex
	code   int
	msg    string
	logger *slog.Logger
}

// Logf appends one line to this run's log file, the text the admin's
// "execution log" page shows. Safe for concurrent use.
func (j *Job) Logf(format string, args ...any) {
	j.log.writeLine(j.now(), j.Handler, j.LogID, fmt.Sprintf(format, args...))
}

// Logger returns a slog.Logger writing to this run's log file, for code
// that already logs through slog.
func (j *Job) Logger() *slog.Logger {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.logger == nil {
		j.logger = slog.New(slog.NewTextHandler(jobWriter{j}, &slog.HandlerOptions{
			ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
				if a.Key == slog.TimeKey {
					return slog.Attr{} // the line prefix already has the time
				}
				return a
			},
		}))
	}
	return j.logger
}

type jobWriter struct{ j *Job }

func (w jobWriter) Write(p []byte) (int, error) {
	s := string(p)
	for len(s) > 0 && (s[len(s)-1] == '\n' || s[len(s)-1] == '\r') {
		s = s[:len(s)-1]
	}
	w.j.log.writeLine(w.j.now(), w.j.Handler, w.j.LogID, s)
	return len(p), nil
}

// SetResult sets the handle code and message reported when the handler
// returns nil (XxlJobHelper.handleResult). code should be 200, 500 or 502;
// a code <= 0 is reported as 500 "job handle result lost.".
func (j *Job) SetResult(code int, msg string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.code, j.msg = code, msg
}

// Succeed reports 200 with msg (XxlJobHelper.handleSuccess).
func (j *Job) Succeed(msg string) { j.SetResult(xjob.CodeSuccess, msg) }

// Fail reports 500 with msg without returning an error (XxlJobHelper.handleFail).
func (j *Job) Fail(msg string) { j.SetResult(xjob.CodeFail, msg) }

// FailTimeout reports 502 with msg (XxlJobHelper.handleTimeout).
func (j *Job) FailTimeout(msg string) { j.SetResult(xjob.CodeTimeout, msg) }

func (j *Job) result() (int, string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.code, j.msg
}
