package console

import (
	"cmp"
	"math"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/admin"
	"github.com/xjobdev/xjob/internal/web/auth"
)

type dayBar struct {
	Day                  string
	Suc, Fail, Run       int
	X, W, YS, HS, YF, HF float64
	YR, HR               float64
	Label                bool
}

// pieSlice is one outcome's arc of the dashboard's pie: an SVG circle
// stroke of Len out of the circumference, starting at Offset.
type pieSlice struct {
	Class, Key  string
	N           int
	Len, Offset float64
	Pct         int
}

type dashboardPage struct {
	base
	Jobs, Online, Today, Total int
	Days                       int
	Bars                       []dayBar
	Max                        int
	Pie                        []pieSlice
	Failures                   []xjob.Log
	JobNames                   map[int64]string
}

// scope is what a page may count: every group for an admin (nil), else
// the user's groups; ok is false for a user without any group.
func scope(p auth.Principal, gs []xjob.Group) (ids []int64, ok bool) {
	if p.Admin() {
		return nil, true
	}
	for _, g := range gs {
		ids = append(ids, g.ID)
	}
	return ids, len(ids) > 0
}

// dashboard counts with one query each (jobs, online executors, the
// report): an admin sees the installation's report, a normal user the
// report of its groups' logs.
func (h *Handler) dashboard(w http.ResponseWriter, r *http.Request, p auth.Principal) {
	ctx := r.Context()
	d := dashboardPage{base: h.base(r, p, "dashboard"), Days: 7}
	if n, err := strconv.Atoi(r.URL.Query().Get("days")); err == nil && n >= 1 && n <= 90 {
		d.Days = n
	}
	gs, err := h.visibleGroups(r, p)
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	ids, counted := scope(p, gs)
	today := h.cfg.Clock.Now().UTC()
	from, to := today.AddDate(0, 0, -(d.Days-1)).Format(time.DateOnly), today.Format(time.DateOnly)
	var days []xjob.ReportDay
	if counted {
		if d.Jobs, err = h.cfg.Admin.CountJobs(ctx, admin.CountJobsParams{GroupIDs: ids}); err != nil {
			h.serverError(w, r, err)
			return
		}
		apps := make([]string, len(gs))
		for i, g := range gs {
			apps[i] = g.AppName
		}
		if d.Online, err = h.cfg.Admin.OnlineExecutors(ctx, apps); err != nil {
			h.serverError(w, r, err)
			return
		}
		if d.Failures, err = h.recentFailures(r, ids, 10); err != nil {
			h.serverError(w, r, err)
			return
		}
		names, err := h.jobNames(r, d.Failures)
		if err != nil {
			h.serverError(w, r, err)
			return
		}
		d.JobNames = names
	}
	if p.Admin() {
		days, err = h.cfg.Admin.Report(ctx, from, to)
	} else {
		days, err = h.cfg.Admin.GroupReport(ctx, ids, from, to)
	}
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	var suc, fail, run int
	for _, day := range days {
		n := day.SucCount + day.FailCount + day.RunningCount
		suc, fail, run = suc+day.SucCount, fail+day.FailCount, run+day.RunningCount
		d.Total += n
		d.Max = max(d.Max, n)
		if day.Day == to {
			d.Today = n
		}
	}
	d.Bars = bars(days, d.Max)
	d.Pie = pie(suc, fail, run)
	h.render(w, r, "dashboard", d)
}

// bars lays out a 600×180 chart, stacked success / failure / running.
func bars(days []xjob.ReportDay, top int) []dayBar {
	const width, height = 600.0, 180.0
	slot := width / float64(max(len(days), 1))
	scale := height / float64(max(top, 1))
	out := make([]dayBar, 0, len(days))
	for i, day := range days {
		b := dayBar{Day: day.Day[5:], Suc: day.SucCount, Fail: day.FailCount, Run: day.RunningCount,
			X: float64(i)*slot + slot*0.15, W: slot * 0.7, Label: len(days) <= 14 || i%(len(days)/7+1) == 0}
		b.HS, b.HF, b.HR = float64(b.Suc)*scale, float64(b.Fail)*scale, float64(b.Run)*scale
		b.YS = height - b.HS
		b.YF = b.YS - b.HF
		b.YR = b.YF - b.HR
		out = append(out, b)
	}
	return out
}

// pie is xxl-job's success/fail pie as stroked arcs of a circle of radius
// 15.9155 (circumference 100, so lengths are percentages).
func pie(suc, fail, run int) []pieSlice {
	total := suc + fail + run
	if total == 0 {
		return nil
	}
	var out []pieSlice
	at := 0.0
	for _, s := range []pieSlice{{Class: "suc", Key: "success", N: suc}, {Class: "fail", Key: "fail", N: fail},
		{Class: "run", Key: "running", N: run}} {
		s.Len = 100 * float64(s.N) / float64(total)
		s.Offset = 25 - at // start at twelve o'clock
		s.Pct = int(math.Round(s.Len))
		at += s.Len
		out = append(out, s)
	}
	return out
}

// recentFailures is the newest n failed logs across the groups ids
// (every group when nil): one newest-first read for an admin, else the
// newest n of each of the user's groups merged by time.
func (h *Handler) recentFailures(r *http.Request, ids []int64, n int) ([]xjob.Log, error) {
	if ids == nil {
		page, err := h.cfg.Admin.ListLogs(r.Context(), admin.ListLogsParams{Status: xjob.LogFail, Limit: n})
		return page.Logs, err
	}
	var all []xjob.Log
	for _, g := range ids {
		page, err := h.cfg.Admin.ListLogs(r.Context(), admin.ListLogsParams{GroupID: g, Status: xjob.LogFail, Limit: n})
		if err != nil {
			return nil, err
		}
		all = append(all, page.Logs...)
	}
	slices.SortFunc(all, func(a, b xjob.Log) int {
		return cmp.Or(cmp.Compare(b.TriggerTime, a.TriggerTime), cmp.Compare(b.ID, a.ID))
	})
	return all[:min(n, len(all))], nil
}

// jobNames names the jobs of logs (their descriptions), read in one call.
func (h *Handler) jobNames(r *http.Request, logs []xjob.Log) (map[int64]string, error) {
	ids := make([]int64, 0, len(logs))
	for _, l := range logs {
		if !slices.Contains(ids, l.JobID) {
			ids = append(ids, l.JobID)
		}
	}
	jobs, err := h.cfg.Admin.JobsByID(r.Context(), ids)
	if err != nil {
		return nil, err
	}
	out := make(map[int64]string, len(jobs))
	for id, j := range jobs {
		out[id] = j.Description
	}
	return out, nil
}
