package xxlimport

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

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
	// Unmapped says, one line each, which logs since the cut-off are not
	// carried over and why.
	Unmapped []string
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
	// Logs of jobs that are not imported — deleted from xxl_job_info by
	// hand, or left out by Map — have no job here to belong to; the
	// report days still count them, so the summary says so.
	orphans := map[int64]int{}
	untimed := 0
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
		switch {
		case !kept[l.JobID]:
			orphans[l.JobID]++
			return nil
		case trig == "":
			untimed++
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
	if len(orphans) > 0 {
		ids := slices.Sorted(maps.Keys(orphans))
		n := 0
		for _, c := range orphans {
			n += c
		}
		h.Unmapped = append(h.Unmapped, fmt.Sprintf("xxl_job_log: %d trigger logs of %d jobs that are not imported "+
			"(deleted in xxl-job, or left out above: %s) not carried over; the report days carried over still count them",
			n, len(ids), listIDs(ids, 20)))
	}
	if untimed > 0 {
		h.Unmapped = append(h.Unmapped, fmt.Sprintf("xxl_job_log: %d trigger logs without a trigger time not carried over", untimed))
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

// listIDs writes ids as "1, 2, 3", the first max of them.
func listIDs(ids []int64, maxIDs int) string {
	parts := make([]string, 0, min(len(ids), maxIDs)+1)
	for i, id := range ids {
		if i == maxIDs {
			parts = append(parts, fmt.Sprintf("… %d more", len(ids)-maxIDs))
			break
		}
		parts = append(parts, "job "+strconv.FormatInt(id, 10))
	}
	return strings.Join(parts, ", ")
}

// triggerTitles are the trigger types' titles in xxl-job's message files
// (en, zh_CN, zh_TC), lower-cased. The admin opens every trigger message
// with "<label>：<title><br>"; the rest of the message names other things
// in the same words ("失败重试次数", the retry count, is on every line of
// a Chinese installation's logs; "Manual registration" on every log of a
// manual group), so only the title is read.
var triggerTitles = map[string]xjob.TriggerType{
	"cron trigger": xjob.TriggerCron, "cron触发": xjob.TriggerCron, "cron觸發": xjob.TriggerCron,
	"manual trigger": xjob.TriggerManual, "手动触发": xjob.TriggerManual, "手動觸發": xjob.TriggerManual,
	"parent job trigger": xjob.TriggerParent, "父任务触发": xjob.TriggerParent, "父任務觸發": xjob.TriggerParent,
	"api trigger": xjob.TriggerAPI, "api触发": xjob.TriggerAPI, "api觸發": xjob.TriggerAPI,
	"fail retry trigger": xjob.TriggerRetry, "失败重试触发": xjob.TriggerRetry, "失敗重試觸發": xjob.TriggerRetry,
	"misfire compensation trigger": xjob.TriggerMisfire, "调度过期补偿": xjob.TriggerMisfire, "調度過期補償": xjob.TriggerMisfire,
}

// triggerType reads the trigger type from the title that opens a log's
// trigger message; CRON when there is none it knows (the admin labels its
// own schedule's fires so).
func triggerType(msg string) xjob.TriggerType {
	first, _, _ := strings.Cut(msg, "<br>")
	first, _, _ = strings.Cut(first, "\n")
	i := strings.IndexAny(first, "：:")
	if i < 0 {
		return xjob.TriggerCron
	}
	_, size := utf8.DecodeRuneInString(first[i:])
	if t, ok := triggerTitles[strings.ToLower(strings.TrimSpace(first[i+size:]))]; ok {
		return t
	}
	return xjob.TriggerCron
}
