package adminclient

import (
	"context"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/pkg/protocol"
)

// Health calls GET /healthz (no auth): a nil error means the server is up.
func (c *Client) Health(ctx context.Context) error {
	var out struct {
		Status string `json:"status"`
	}
	return c.do(ctx, http.MethodGet, "/healthz", nil, nil, &out)
}

// Metrics returns the server's counters (GET /v1/metrics).
func (c *Client) Metrics(ctx context.Context) (xjob.MetricsSnapshot, error) {
	var out xjob.MetricsSnapshot
	err := c.do(ctx, http.MethodGet, "/v1/metrics", nil, nil, &out)
	return out, err
}

// ---- jobs -------------------------------------------------------------

// JobListParams filters GET /v1/jobs. Zero fields do not filter.
type JobListParams struct {
	Group   int64
	Status  *xjob.TriggerStatus // nil: any status
	Desc    string              // substring of the description
	Handler string              // substring of the handler name
	Author  string              // substring of the author
	Cursor  string              // JobPage.Next of the previous page
	Limit   int                 // page size; 0 lets the server choose
}

func (p JobListParams) query() url.Values {
	q := url.Values{}
	setInt(q, "group", p.Group)
	if p.Status != nil {
		q.Set("status", strconv.Itoa(int(*p.Status)))
	}
	setString(q, "desc", p.Desc)
	setString(q, "handler", p.Handler)
	setString(q, "author", p.Author)
	setString(q, "cursor", p.Cursor)
	setInt(q, "limit", int64(p.Limit))
	return q
}

// JobPage is one page of jobs; Next is the cursor of the following page,
// empty on the last one.
type JobPage struct {
	Items []xjob.Job `json:"items"`
	Next  string     `json:"next"`
}

// JobCreate creates a job (POST /v1/jobs). The server ignores id, version
// and times; TriggerStatus 1 creates it started.
func (c *Client) JobCreate(ctx context.Context, job xjob.Job) (xjob.Job, error) {
	var out xjob.Job
	err := c.do(ctx, http.MethodPost, "/v1/jobs", nil, job, &out)
	return out, err
}

// JobList returns one page of jobs (GET /v1/jobs).
func (c *Client) JobList(ctx context.Context, p JobListParams) (JobPage, error) {
	var out JobPage
	err := c.do(ctx, http.MethodGet, "/v1/jobs", p.query(), nil, &out)
	return out, err
}

// JobListAll walks every page of jobs matching p, following the cursors.
// It stops at the first error, which it yields.
func (c *Client) JobListAll(ctx context.Context, p JobListParams) iter.Seq2[xjob.Job, error] {
	return func(yield func(xjob.Job, error) bool) {
		for {
			page, err := c.JobList(ctx, p)
			if err != nil {
				yield(xjob.Job{}, err)
				return
			}
			for _, j := range page.Items {
				if !yield(j, nil) {
					return
				}
			}
			if page.Next == "" || page.Next == p.Cursor {
				return
			}
			p.Cursor = page.Next
		}
	}
}

// JobGet returns one job (GET /v1/jobs/{id}).
func (c *Client) JobGet(ctx context.Context, id int64) (xjob.Job, error) {
	var out xjob.Job
	err := c.do(ctx, http.MethodGet, idPath("/v1/jobs", id, ""), nil, nil, &out)
	return out, err
}

// JobUpdate replaces the editable fields of job id with job's (PUT
// /v1/jobs/{id}). A non-zero job.Version makes the write conditional: the
// server answers 409 (errors.Is xjob.ErrConflict) when the job changed since
// it was read.
func (c *Client) JobUpdate(ctx context.Context, id int64, job xjob.Job) (xjob.Job, error) {
	var out xjob.Job
	err := c.do(ctx, http.MethodPut, idPath("/v1/jobs", id, ""), nil, job, &out)
	return out, err
}

// JobDelete deletes a job (DELETE /v1/jobs/{id}).
func (c *Client) JobDelete(ctx context.Context, id int64) error {
	return c.do(ctx, http.MethodDelete, idPath("/v1/jobs", id, ""), nil, nil, nil)
}

// JobStart makes the scheduler fire the job (POST /v1/jobs/{id}/start).
func (c *Client) JobStart(ctx context.Context, id int64) (xjob.Job, error) {
	var out xjob.Job
	err := c.do(ctx, http.MethodPost, idPath("/v1/jobs", id, "/start"), nil, nil, &out)
	return out, err
}

// JobStop stops the scheduler firing the job (POST /v1/jobs/{id}/stop).
func (c *Client) JobStop(ctx context.Context, id int64) (xjob.Job, error) {
	var out xjob.Job
	err := c.do(ctx, http.MethodPost, idPath("/v1/jobs", id, "/stop"), nil, nil, &out)
	return out, err
}

// TriggerParams overrides, for one manual trigger, the job's parameter
// (when ExecutorParam is not nil, even if empty) and the executor addresses.
type TriggerParams struct {
	ExecutorParam *string  `json:"executorParam,omitempty"`
	AddressList   []string `json:"addressList,omitempty"`
}

// TriggerResult names the occurrence a manual trigger queued; its log
// appears once dispatch has run it.
type TriggerResult struct {
	JobID        int64  `json:"jobId"`
	OccurrenceID string `json:"occurrenceId"`
}

// JobTrigger fires the job once now (POST /v1/jobs/{id}/trigger); the
// server accepts it (202) and dispatches asynchronously.
func (c *Client) JobTrigger(ctx context.Context, id int64, p TriggerParams) (TriggerResult, error) {
	var out TriggerResult
	err := c.do(ctx, http.MethodPost, idPath("/v1/jobs", id, "/trigger"), nil, p, &out)
	return out, err
}

// JobNext returns the job's next n fire times (GET /v1/jobs/{id}/next); n
// <= 0 lets the server choose (5).
func (c *Client) JobNext(ctx context.Context, id int64, n int) ([]time.Time, error) {
	q := url.Values{}
	setInt(q, "n", int64(n))
	var out struct {
		Next []time.Time `json:"next"`
	}
	err := c.do(ctx, http.MethodGet, idPath("/v1/jobs", id, "/next"), q, nil, &out)
	return out.Next, err
}

// CronNextParams asks for a preview of a cron expression. Zero TimeZone,
// From and N let the server choose (UTC, now, 5).
type CronNextParams struct {
	Expr     string
	TimeZone string
	From     time.Time
	N        int
}

// CronPreview is the server's preview of a cron expression.
type CronPreview struct {
	Expression string      `json:"expression"`
	TimeZone   string      `json:"timeZone"`
	Next       []time.Time `json:"next"`
}

// CronNext previews a cron expression on the server (GET /v1/cron/next); a
// parse error comes back as a 400 *APIError with the parser's message.
func (c *Client) CronNext(ctx context.Context, p CronNextParams) (CronPreview, error) {
	q := url.Values{}
	q.Set("expr", p.Expr)
	setString(q, "tz", p.TimeZone)
	if !p.From.IsZero() {
		q.Set("from", p.From.Format(time.RFC3339))
	}
	setInt(q, "n", int64(p.N))
	var out CronPreview
	err := c.do(ctx, http.MethodGet, "/v1/cron/next", q, nil, &out)
	return out, err
}

// ---- groups -----------------------------------------------------------

// GroupListParams filters GET /v1/groups. Zero fields do not filter.
type GroupListParams struct {
	AppName string
	Title   string
}

// GroupCreate creates an executor group (POST /v1/groups).
func (c *Client) GroupCreate(ctx context.Context, g xjob.Group) (xjob.Group, error) {
	var out xjob.Group
	err := c.do(ctx, http.MethodPost, "/v1/groups", nil, g, &out)
	return out, err
}

// GroupList returns the groups matching p (GET /v1/groups).
func (c *Client) GroupList(ctx context.Context, p GroupListParams) ([]xjob.Group, error) {
	q := url.Values{}
	setString(q, "appname", p.AppName)
	setString(q, "title", p.Title)
	var out struct {
		Items []xjob.Group `json:"items"`
	}
	err := c.do(ctx, http.MethodGet, "/v1/groups", q, nil, &out)
	return out.Items, err
}

// GroupGet returns one group (GET /v1/groups/{id}).
func (c *Client) GroupGet(ctx context.Context, id int64) (xjob.Group, error) {
	var out xjob.Group
	err := c.do(ctx, http.MethodGet, idPath("/v1/groups", id, ""), nil, nil, &out)
	return out, err
}

// GroupUpdate replaces the editable fields of group id (PUT /v1/groups/{id}).
func (c *Client) GroupUpdate(ctx context.Context, id int64, g xjob.Group) (xjob.Group, error) {
	var out xjob.Group
	err := c.do(ctx, http.MethodPut, idPath("/v1/groups", id, ""), nil, g, &out)
	return out, err
}

// GroupDelete deletes a group (DELETE /v1/groups/{id}); the server answers
// 409 (errors.Is xjob.ErrConflict) while jobs use it.
func (c *Client) GroupDelete(ctx context.Context, id int64) error {
	return c.do(ctx, http.MethodDelete, idPath("/v1/groups", id, ""), nil, nil, nil)
}

// Executor is one live executor of a group, as its last heartbeat left it.
type Executor struct {
	Address    string `json:"address"`
	UpdateTime int64  `json:"updateTime"` // Unix ms of the last heartbeat
}

// GroupExecutors lists the live executors of a group (GET
// /v1/groups/{id}/executors).
func (c *Client) GroupExecutors(ctx context.Context, id int64) ([]Executor, error) {
	var out struct {
		Items []Executor `json:"items"`
	}
	err := c.do(ctx, http.MethodGet, idPath("/v1/groups", id, "/executors"), nil, nil, &out)
	return out.Items, err
}

// ---- logs -------------------------------------------------------------

// Log status filters understood by GET /v1/logs.
const (
	LogStatusSuccess = "success"
	LogStatusFail    = "fail"
	LogStatusRunning = "running"
)

// LogListParams filters GET /v1/logs. Zero fields do not filter.
type LogListParams struct {
	Job    int64
	Group  int64
	Status string    // LogStatusSuccess, LogStatusFail or LogStatusRunning
	From   time.Time // trigger time at or after
	To     time.Time // trigger time at or before
	Cursor string    // LogPage.Next of the previous page
	Limit  int       // page size; 0 lets the server choose
}

func (p LogListParams) query() url.Values {
	q := url.Values{}
	setInt(q, "job", p.Job)
	setInt(q, "group", p.Group)
	setString(q, "status", p.Status)
	if !p.From.IsZero() {
		q.Set("from", strconv.FormatInt(p.From.UnixMilli(), 10))
	}
	if !p.To.IsZero() {
		q.Set("to", strconv.FormatInt(p.To.UnixMilli(), 10))
	}
	setString(q, "cursor", p.Cursor)
	setInt(q, "limit", int64(p.Limit))
	return q
}

// LogPage is one page of trigger logs; Next is the cursor of the following
// page, empty on the last one.
type LogPage struct {
	Items []xjob.Log `json:"items"`
	Next  string     `json:"next"`
}

// LogList returns one page of trigger logs (GET /v1/logs).
func (c *Client) LogList(ctx context.Context, p LogListParams) (LogPage, error) {
	var out LogPage
	err := c.do(ctx, http.MethodGet, "/v1/logs", p.query(), nil, &out)
	return out, err
}

// LogListAll walks every page of logs matching p, following the cursors.
// It stops at the first error, which it yields.
func (c *Client) LogListAll(ctx context.Context, p LogListParams) iter.Seq2[xjob.Log, error] {
	return func(yield func(xjob.Log, error) bool) {
		for {
			page, err := c.LogList(ctx, p)
			if err != nil {
				yield(xjob.Log{}, err)
				return
			}
			for _, l := range page.Items {
				if !yield(l, nil) {
					return
				}
			}
			if page.Next == "" || page.Next == p.Cursor {
				return
			}
			p.Cursor = page.Next
		}
	}
}

// LogGet returns one trigger log (GET /v1/logs/{id}).
func (c *Client) LogGet(ctx context.Context, id int64) (xjob.Log, error) {
	var out xjob.Log
	err := c.do(ctx, http.MethodGet, idPath("/v1/logs", id, ""), nil, nil, &out)
	return out, err
}

// LogExecutorLog reads the executor's log file of a trigger from line
// fromLine (1-based) on (GET /v1/logs/{id}/executor-log). Continue from
// ToLineNum+1 until IsEnd.
func (c *Client) LogExecutorLog(ctx context.Context, id int64, fromLine int) (protocol.LogResult, error) {
	q := url.Values{}
	setInt(q, "from", int64(fromLine))
	var out protocol.LogResult
	err := c.do(ctx, http.MethodGet, idPath("/v1/logs", id, "/executor-log"), q, nil, &out)
	return out, err
}

// LogKill asks the executor to kill a running trigger and records the
// result (POST /v1/logs/{id}/kill); 409 when it is not running.
func (c *Client) LogKill(ctx context.Context, id int64) (xjob.Log, error) {
	var out xjob.Log
	err := c.do(ctx, http.MethodPost, idPath("/v1/logs", id, "/kill"), nil, nil, &out)
	return out, err
}

// LogClearParams is the input of LogClear: Mode is one of 1m, 3m, 6m, 12m
// (older than that many months), 1k, 10k, 30k, 100k (keep the newest that
// many) or all; GroupID and JobID narrow the scope (0: every group / job).
type LogClearParams struct {
	GroupID int64
	JobID   int64
	Mode    string
}

// LogClear deletes trigger logs as xxl-job's "clear log" (DELETE /v1/logs)
// and returns how many it deleted.
func (c *Client) LogClear(ctx context.Context, p LogClearParams) (int, error) {
	q := url.Values{"mode": {p.Mode}}
	if p.GroupID != 0 {
		q.Set("group", strconv.FormatInt(p.GroupID, 10))
	}
	if p.JobID != 0 {
		q.Set("job", strconv.FormatInt(p.JobID, 10))
	}
	var out struct {
		Deleted int `json:"deleted"`
	}
	err := c.do(ctx, http.MethodDelete, "/v1/logs", q, nil, &out)
	return out.Deleted, err
}

// Report returns the daily run report for the days from..to (GET
// /v1/report), each read as a calendar date in its own location (server
// days are UTC, so pass UTC dates for exact days); zero times let the
// server choose.
func (c *Client) Report(ctx context.Context, from, to time.Time) ([]xjob.ReportDay, error) {
	q := url.Values{}
	if !from.IsZero() {
		q.Set("from", from.Format(time.DateOnly))
	}
	if !to.IsZero() {
		q.Set("to", to.Format(time.DateOnly))
	}
	var out struct {
		Items []xjob.ReportDay `json:"items"`
	}
	err := c.do(ctx, http.MethodGet, "/v1/report", q, nil, &out)
	return out.Items, err
}
