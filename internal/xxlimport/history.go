package xxlimport

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/xjobdev/xjob"
)

// History is the trigger logs and report days an import carries over
// (`xjob import xxl-job --logs SINCE`).
type History struct {
	// Logs are xxl_job_log rows since the cut-off, as xjob logs: JobID is
	// the imported job's id, GroupID still xxl-job's group id (the
	// caller maps it to the group's id here), OccurrenceID
	// "import/<origin>/<xxl-job log id>".
	Logs []xjob.Log
	// Days are xxl_job_log_report rows since the cut-off.
	Days []xjob.ReportDay
}

// datetime is how Read asks MySQL for a DATETIME: as text, read in the
// zone the admin ran in (the column has no zone of its own).
const datetime = `'%Y-%m-%d %H:%i:%s'`

// ReadHistory reads the logs and report days triggered at or after since,
// whose jobs Map kept (res.Manifest), with times in opt.TimeZone.
func ReadHistory(ctx context.Context, db *sql.DB, since time.Time, res Result, opt Options, origin string) (History, error) {
	var h History
	loc, err := time.LoadLocation(opt.TimeZone)
	if err != nil {
		return h, fmt.Errorf("time zone %q: %w", opt.TimeZone, err)
	}
	kept := map[int64]bool{}
	for _, j := range res.Manifest.Jobs {
		kept[j.ID-opt.IDOffset] = true
	}
	at := func(s string) int64 {
		t, err := time.ParseInLocation(time.DateTime, s, loc)
		if err != nil {
			return 0
		}
		return t.UnixMilli()
	}
	from := since.In(loc).Format(time.DateTime)
	err = query(ctx, db, `SELECT id, job_group, job_id, COALESCE(executor_address, ''), COALESCE(executor_handler, ''),
		COALESCE(executor_param, ''), COALESCE(executor_sharding_param, ''), executor_fail_retry_count,
		COALESCE(DATE_FORMAT(trigger_time, `+datetime+`), ''), trigger_code, COALESCE(trigger_msg, ''),
		COALESCE(DATE_FORMAT(handle_time, `+datetime+`), ''), handle_code, COALESCE(handle_msg, ''), alarm_status
		FROM xxl_job_log WHERE trigger_time >= ? ORDER BY id`, func(s scanner) error {
		var l xjob.Log
		var id int64
		var trig, handle string
		var alarm int
		if err := s.Scan(&id, &l.GroupID, &l.JobID, &l.ExecutorAddress, &l.ExecutorHandler, &l.ExecutorParam,
			&l.ExecutorShardingParam, &l.ExecutorFailRetryCount, &trig, &l.TriggerCode, &l.TriggerMsg,
			&handle, &l.HandleCode, &l.HandleMsg, &alarm); err != nil {
			return err
		}
		if !kept[l.JobID] || trig == "" {
			return nil
		}
		l.JobID += opt.IDOffset
		l.OccurrenceID = "import/" + origin + "/" + strconv.FormatInt(id, 10)
		l.TriggerTime, l.HandleTime = at(trig), at(handle)
		l.TriggerType = triggerType(l.TriggerMsg)
		if l.TriggerType == xjob.TriggerCron || l.TriggerType == xjob.TriggerMisfire {
			l.ScheduledTime = l.TriggerTime
		}
		l.AlarmStatus = xjob.AlarmStatus(alarm)
		if l.TriggerCode == xjob.CodeSuccess && l.HandleCode == xjob.CodeNone {
			// Still running in xxl-job: its result will never reach xjob.
			l.HandleCode, l.HandleMsg, l.HandleTime = xjob.CodeFail, "result not carried over by the import", l.TriggerTime
		}
		h.Logs = append(h.Logs, l)
		return nil
	}, from)
	if err != nil {
		return h, fmt.Errorf("read xxl_job_log: %w", err)
	}
	err = query(ctx, db, `SELECT DATE_FORMAT(trigger_day, '%Y-%m-%d'), running_count, suc_count, fail_count
		FROM xxl_job_log_report WHERE trigger_day >= ? ORDER BY trigger_day`, func(s scanner) error {
		var d xjob.ReportDay
		if err := s.Scan(&d.Day, &d.RunningCount, &d.SucCount, &d.FailCount); err != nil {
			return err
		}
		h.Days = append(h.Days, d)
		return nil
	}, since.In(loc).Format(time.DateOnly))
	if err != nil {
		return h, fmt.Errorf("read xxl_job_log_report: %w", err)
	}
	return h, nil
}

// triggerType reads the trigger type from a log's trigger message, where
// xxl-job writes it (in English or Chinese); CRON when it says none.
func triggerType(msg string) xjob.TriggerType {
	for _, m := range []struct {
		words []string
		t     xjob.TriggerType
	}{
		{[]string{"Manual", "手动"}, xjob.TriggerManual},
		{[]string{"Parent", "父任务"}, xjob.TriggerParent},
		{[]string{"API"}, xjob.TriggerAPI},
		{[]string{"Fail retry", "失败重试"}, xjob.TriggerRetry},
		{[]string{"Misfire", "过期补偿"}, xjob.TriggerMisfire},
	} {
		for _, w := range m.words {
			if strings.Contains(msg, w) {
				return m.t
			}
		}
	}
	return xjob.TriggerCron
}
