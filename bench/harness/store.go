package harness

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/adapter/sqlitestore"
	"github.com/xjobdev/xjob/internal/fire"
)

// openSQL opens the xjob file directly (modernc "sqlite" driver, registered
// by internal/adapter/sqlitestore). The harness reads logs and seeds jobs this way only
// while no xjob runs, or for reads that WAL lets run beside it.
func openSQL(path string) (*sql.DB, error) {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return db, nil
}

// ReadLogs returns the trigger logs whose scheduled time is in iv.
func ReadLogs(ctx context.Context, path string, iv Interval) ([]LogRow, error) {
	db, err := openSQL(path)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, `SELECT id, job_id, scheduled_time, trigger_type, trigger_code
		FROM logs WHERE scheduled_time >= ? AND scheduled_time < ?`, iv.From, iv.To)
	if err != nil {
		return nil, fmt.Errorf("read logs: %w", err)
	}
	defer rows.Close()
	var out []LogRow
	for rows.Next() {
		var l LogRow
		if err := rows.Scan(&l.ID, &l.JobID, &l.Scheduled, &l.TriggerType, &l.TriggerCode); err != nil {
			return nil, fmt.Errorf("read logs: %w", err)
		}
		out = append(out, l)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read logs: %w", err)
	}
	return out, nil
}

// ReadPending returns the (job, fire time) pairs in iv still waiting in
// xjob's durable queues (ring buckets and dispatch tasks in the
// queue_messages table) once xjob has stopped: fires that were late, not
// lost — an overloaded run ends with a backlog.
func ReadPending(ctx context.Context, path string, iv Interval) (map[[2]int64]bool, error) {
	db, err := openSQL(path)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, `SELECT body FROM queue_messages`)
	if err != nil {
		return nil, fmt.Errorf("read pending: %w", err)
	}
	defer rows.Close()
	out := map[[2]int64]bool{}
	for rows.Next() {
		var body []byte
		if err := rows.Scan(&body); err != nil {
			return nil, fmt.Errorf("read pending: %w", err)
		}
		for _, p := range pendingPairs(body) {
			if iv.contains(p[1]) {
				out[p] = true
			}
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read pending: %w", err)
	}
	return out, nil
}

// pendingPairs decodes a queued message: a ring bucket ({"items":[{"j","t"}]})
// or a dispatch task ({"occurrence":{"jobId","fireTime"}}).
func pendingPairs(body []byte) [][2]int64 {
	var m struct {
		Items []struct {
			J int64 `json:"j"`
			T int64 `json:"t"`
		} `json:"items"`
		Occurrence *struct {
			JobID    int64 `json:"jobId"`
			FireTime int64 `json:"fireTime"`
		} `json:"occurrence"`
	}
	if json.Unmarshal(body, &m) != nil {
		return nil
	}
	var out [][2]int64
	for _, it := range m.Items {
		out = append(out, [2]int64{it.J, it.T})
	}
	if o := m.Occurrence; o != nil && o.FireTime != 0 {
		out = append(out, [2]int64{o.JobID, o.FireTime})
	}
	return out
}

// LogCounter counts, while xjob runs, the trigger logs created for a
// window's fires: each Poll reads only the rows added since the last one
// (by rowid), so it stays cheap however many logs the file holds. The
// steady runs use it to wait until the window's fires have all been
// triggered, or have stopped coming, before they stop xjob.
type LogCounter struct {
	db     *sql.DB
	win    Interval
	lastID int64
	n      int
}

// NewLogCounter starts counting the logs scheduled in win that are created
// from now on.
func NewLogCounter(ctx context.Context, path string, win Interval) (*LogCounter, error) {
	db, err := openSQL(path)
	if err != nil {
		return nil, err
	}
	c := &LogCounter{db: db, win: win}
	if err := db.QueryRowContext(ctx, `SELECT COALESCE(MAX(id), 0) FROM logs`).Scan(&c.lastID); err != nil {
		db.Close()
		return nil, fmt.Errorf("log counter: %w", err)
	}
	return c, nil
}

// Poll returns how many logs scheduled in the window exist so far.
func (c *LogCounter) Poll(ctx context.Context) (int, error) {
	var n, last sql.NullInt64
	err := c.db.QueryRowContext(ctx, `SELECT SUM(CASE WHEN scheduled_time >= ? AND scheduled_time < ? THEN 1 ELSE 0 END), MAX(id)
		FROM logs WHERE id > ?`, c.win.From, c.win.To, c.lastID).Scan(&n, &last)
	if err != nil {
		return c.n, fmt.Errorf("log counter: %w", err)
	}
	if last.Valid {
		c.n += int(n.Int64)
		c.lastID = last.Int64
	}
	return c.n, nil
}

// Close releases the connection.
func (c *LogCounter) Close() error { return c.db.Close() }

// SeedSpec is a workload written straight into a new xjob file before xjob
// starts: Due jobs firing every second from FirstFire on, and Idle running
// jobs whose next fire is years away (they sit in the due index, as stored
// jobs of a large installation do, without ever being due).
type SeedSpec struct {
	Path      string
	Shards    int
	Executor  string // manual group address
	Due, Idle int
	FirstFire int64 // Unix ms of the due jobs' first fire
}

// Seed creates the schema (through sqlitestore.Open, so the migrations are
// the real ones), one manual executor group, and the jobs. Due jobs go
// through sqlitestore's JobInsert; idle ones through one prepared INSERT in
// one transaction, since a million single-row transactions would take
// minutes — the row is the one JobInsert writes, shard included. It returns
// the due jobs' ids.
func Seed(ctx context.Context, s SeedSpec) ([]int64, error) {
	st, err := sqlitestore.Open(ctx, s.Path, sqlitestore.Options{Shards: s.Shards})
	if err != nil {
		return nil, fmt.Errorf("seed: %w", err)
	}
	now := time.Now().UnixMilli()
	g, err := st.GroupInsert(ctx, xjob.Group{AppName: "xjob-bench", Title: "bench", AddressType: xjob.AddressManual,
		AddressList: []string{s.Executor}, Version: 1, UpdatedAt: now})
	if err != nil {
		st.Close()
		return nil, fmt.Errorf("seed group: %w", err)
	}
	ids := make([]int64, 0, s.Due)
	for range s.Due {
		j := benchJob(g.ID, "* * * * * ?")
		j.TriggerNextTime, j.CreatedAt, j.UpdatedAt = s.FirstFire, now, now
		j, err := st.JobInsert(ctx, j)
		if err != nil {
			st.Close()
			return nil, fmt.Errorf("seed: %w", err)
		}
		ids = append(ids, j.ID)
	}
	if err := st.Close(); err != nil {
		return nil, fmt.Errorf("seed close: %w", err)
	}
	if s.Idle == 0 {
		return ids, nil
	}
	db, err := openSQL(s.Path)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("seed idle: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	stmt, err := tx.PrepareContext(ctx, `INSERT INTO jobs (id, shard, group_id, description, author, alarm_email,
		schedule_type, schedule_conf, time_zone, misfire_strategy,
		route_strategy, handler, param, block_strategy, timeout_seconds, fail_retry_count,
		glue_type, glue_source, glue_remark, glue_updated_at, child_job_ids,
		trigger_status, trigger_last_time, trigger_next_time,
		version, revision, created_at, updated_at)
		VALUES (?,?,?,'idle','bench','', 'CRON','0 0 0 1 1 ? 2099','UTC','DO_NOTHING',
		'FIRST','bench','','SERIAL_EXECUTION',0,0, 'BEAN','','',0,'', 1,0,?, 1,1,?,?)`)
	if err != nil {
		return nil, fmt.Errorf("seed idle: %w", err)
	}
	next := time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	base := int64(1)
	if len(ids) > 0 {
		base = ids[len(ids)-1] + 1
	}
	for i := range int64(s.Idle) {
		id := base + i
		if _, err := stmt.ExecContext(ctx, id, fire.ShardOf(id, s.Shards), g.ID, next, now, now); err != nil {
			return nil, fmt.Errorf("seed idle: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("seed idle commit: %w", err)
	}
	return ids, nil
}

// benchJobSpec is the workload's job as the harness asks for it: a BEAN
// handler on a manual group and nothing else, so the server applies its own
// defaults (xxl-job's: DO_NOTHING on misfire, SERIAL_EXECUTION) and an older
// xjob (a --baseline binary) is sent no field it does not know.
func benchJobSpec(group int64, cron string) xjob.Job {
	return xjob.Job{GroupID: group, Description: "bench", Author: "bench", ScheduleType: xjob.ScheduleCron,
		ScheduleConf: cron, Handler: "bench", TriggerStatus: xjob.StatusRunning}
}

// benchJob is benchJobSpec with the defaults applied, as a row is stored.
func benchJob(group int64, cron string) xjob.Job {
	j := benchJobSpec(group, cron)
	j.ApplyDefaults()
	// KEEP is the server's default: left out (compatJSON drops zero
	// members) so a --baseline xjob that predates the field accepts the job.
	j.AfterCompletion = ""
	return j
}

// ReadPassed collects the "scan: fires passed over" and "ring: fires
// passed over" debug lines of an xjob log file: per job, the spans of
// scheduled times (inclusive in the log, half-open here) the scan passed
// over by its misfire / late-collapse rules, and the fires the ring
// received beyond the misfire threshold and dropped (DO_NOTHING: a ring
// bucket held up, by a database outage or a dead node's claim). A binary
// that predates those lines yields none.
func ReadPassed(path string, into map[int64][]Interval) error {
	add := func(line []byte) {
		var v struct {
			Job      int64 `json:"job"`
			From, To int64
		}
		if json.Unmarshal(line, &v) == nil && v.Job != 0 {
			into[v.Job] = append(into[v.Job], Interval{From: v.From, To: v.To + 1})
		}
	}
	return errors.Join(eachLine(path, "scan: fires passed over", add), eachLine(path, "ring: fires passed over", add))
}

// ScanTick is one "scan tick" debug line of a process log (the emulated
// AWS run, whose functions have no /v1/metrics).
type ScanTick struct {
	At   time.Time
	Jobs int
	Took time.Duration
}

// ReadScanTicks parses the scan tick lines of a log file.
func ReadScanTicks(path string) ([]ScanTick, error) {
	var out []ScanTick
	err := eachLine(path, "scan tick", func(line []byte) {
		var v struct {
			Time time.Time `json:"time"`
			Jobs int       `json:"jobs"`
			Took int64     `json:"took"` // slog writes durations as nanoseconds
			Err  string    `json:"err"`
		}
		if json.Unmarshal(line, &v) == nil && v.Err == "" {
			out = append(out, ScanTick{At: v.Time, Jobs: v.Jobs, Took: time.Duration(v.Took)})
		}
	})
	return out, err
}

// eachLine calls fn with every line of a JSON process log whose message is
// msg.
func eachLine(path, msg string, fn func(line []byte)) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	want := []byte(`"msg":"` + msg + `"`)
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if bytes.Contains(sc.Bytes(), want) {
			fn(sc.Bytes())
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	return nil
}

// CountLines counts log lines at level ERROR or containing substr (for the
// report: errors xjob logged during a run).
func CountLines(path, level string) int {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if strings.Contains(sc.Text(), `"level":"`+level+`"`) {
			n++
		}
	}
	return n
}
