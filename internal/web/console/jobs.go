package console

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/admin"
	"github.com/xjobdev/xjob/internal/text"
	"github.com/xjobdev/xjob/internal/web/auth"
	"github.com/xjobdev/xjob/pkg/schedule"
)

type jobsPage struct {
	base
	Groups                             []xjob.Group
	Group                              int64
	Status, Desc, Handler, Author, Ret string
	Jobs                               []xjob.Job
	GroupNames                         map[int64]string
	Pager                              pager
	// Skipped are the jobs a bulk Start passed over (schedule type NONE).
	Skipped []xjob.Job
	// Now (Unix ms) tells a FIX_DELAY job waiting on its run, whose next
	// fire shows as "after the current run", from one already planned.
	Now int64
}

func (h *Handler) jobs(w http.ResponseWriter, r *http.Request, p auth.Principal) {
	q := r.URL.Query()
	d := jobsPage{base: h.base(r, p, "jobs"), Status: q.Get("status"), Desc: q.Get("desc"),
		Handler: q.Get("handler"), Author: q.Get("author"), GroupNames: map[int64]string{}, Pager: newPager(q),
		Now: h.cfg.Clock.Now().UnixMilli()}
	gs, err := h.visibleGroups(r, p)
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	d.Groups = gs
	for _, g := range gs {
		d.GroupNames[g.ID] = g.Title
	}
	d.Group, _ = strconv.ParseInt(q.Get("group"), 10, 64)
	if d.Group == 0 && !p.Admin() && len(gs) > 0 {
		d.Group = gs[0].ID // a normal user always looks at one of its groups
	}
	if d.Group != 0 {
		if err := forbidden(p, d.Group); err != nil {
			h.fail(w, r, err)
			return
		}
	}
	ret := url.Values{}
	for k, v := range q {
		if k != "flash" && k != "skipped" {
			ret[k] = v
		}
	}
	d.Ret = "/console/jobs?" + ret.Encode()
	if s := q.Get("skipped"); s != "" {
		ids, _ := xjob.ParseChildJobIDs(s) // a comma list of ids
		found, err := h.cfg.Admin.JobsByID(r.Context(), ids[:min(len(ids), 100)])
		if err != nil {
			h.serverError(w, r, err)
			return
		}
		for _, id := range ids {
			if j, ok := found[id]; ok && p.CanGroup(j.GroupID) {
				d.Skipped = append(d.Skipped, j)
			}
		}
	}
	if !p.Admin() && len(gs) == 0 {
		h.render(w, r, "jobs", d)
		return
	}
	lp := admin.ListJobsParams{GroupID: d.Group, Description: d.Desc, Handler: d.Handler, Author: d.Author,
		Cursor: d.Pager.Cursor, Limit: d.Pager.Size}
	if st, err := strconv.Atoi(d.Status); err == nil && (st == 0 || st == 1) {
		s := xjob.TriggerStatus(st)
		lp.Status = &s
	}
	page, err := h.cfg.Admin.ListJobs(r.Context(), lp)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	cp := admin.CountJobsParams{Status: lp.Status, Description: d.Desc, Handler: d.Handler, Author: d.Author}
	if d.Group != 0 {
		cp.GroupIDs = []int64{d.Group}
	}
	n, err := h.cfg.Admin.CountJobs(r.Context(), cp)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	d.Pager.Total = groupDigits(n)
	d.Pager.links("/console/jobs", q, page.Next)
	d.Jobs = page.Jobs
	h.render(w, r, "jobs", d)
}

type jobForm struct {
	base
	Job      xjob.Job
	Copy     bool
	Groups   []xjob.Group
	Problems map[string]string
	// Raw keeps what was typed into the number fields, so a refused
	// "abc" is shown back as typed, not as 0.
	Raw     map[string]string
	Preview previewData
	Enums   enums
	Banner  []string
	// Target is an HTTP job's spec, field by field.
	Target targetForm
}

type enums struct {
	Schedule []xjob.ScheduleType
	Misfire  []xjob.MisfireStrategy
	Route    []xjob.RouteStrategy
	Block    []xjob.BlockStrategy
	Glue     []xjob.GlueType
}

var allEnums = enums{
	Schedule: []xjob.ScheduleType{xjob.ScheduleCron, xjob.ScheduleFixRate, xjob.ScheduleFixDelay, xjob.ScheduleNone},
	Misfire:  []xjob.MisfireStrategy{xjob.MisfireDoNothing, xjob.MisfireFireOnceNow},
	Route: []xjob.RouteStrategy{xjob.RouteFirst, xjob.RouteLast, xjob.RouteRound, xjob.RouteRandom,
		xjob.RouteConsistentHash, xjob.RouteLeastFrequentlyUsed, xjob.RouteLeastRecentlyUsed, xjob.RouteFailover,
		xjob.RouteBusyover, xjob.RouteShardingBroadcast},
	Block: []xjob.BlockStrategy{xjob.BlockSerialExecution, xjob.BlockDiscardLater, xjob.BlockCoverEarly},
	Glue: []xjob.GlueType{xjob.GlueBean, xjob.GlueShell, xjob.GluePython, xjob.GluePython2, xjob.GlueNodeJS,
		xjob.GluePHP, xjob.GluePowerShell, xjob.GlueGroovy, xjob.GlueHTTP, xjob.GlueAWS},
}

// fieldOrder is the form's order of fields, which the banner follows.
var fieldOrder = []string{"jobGroup", "jobDesc", "name", "author", "alarmEmail", "scheduleType", "scheduleConf", "timeZone",
	"misfireStrategy", "glueType", "executorHandler", "executorRouteStrategy", "executorBlockStrategy",
	"executorTimeout", "executorFailRetryCount", "childJobIds", "triggerStatus"}

func (h *Handler) renderJobForm(w http.ResponseWriter, r *http.Request, p auth.Principal, j xjob.Job,
	problems, raw map[string]string, cp bool) {
	gs, err := h.visibleGroups(r, p)
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	d := jobForm{base: h.base(r, p, "jobs"), Job: j, Copy: cp, Groups: gs, Problems: problems, Raw: raw, Enums: allEnums,
		Target: targetOf(j, problems)}
	if len(problems) > 0 {
		w.WriteHeader(http.StatusUnprocessableEntity)
	}
	// The banner names each field as the form labels it, in form order.
	for _, f := range fieldOrder {
		if m, ok := problems[f]; ok {
			d.Banner = append(d.Banner, d.field(f)+d.T("sep")+m)
		}
	}
	for f, m := range problems {
		if !containsStr(fieldOrder, f) {
			d.Banner = append(d.Banner, d.field(f)+d.T("sep")+m)
		}
	}
	d.Preview = h.previewOf(d.base, j.ScheduleType, j.ScheduleConf, j.TimeZone)
	h.render(w, r, "jobform", d)
}

func containsStr(xs []string, x string) bool {
	for _, s := range xs {
		if s == x {
			return true
		}
	}
	return false
}

func (h *Handler) jobNew(w http.ResponseWriter, r *http.Request, p auth.Principal) {
	j := xjob.Job{ScheduleType: xjob.ScheduleCron, ScheduleConf: "0 0/5 * * * ?", TimeZone: "UTC", GlueType: xjob.GlueBean,
		Author: p.Name(), GroupID: formInt(r, "group")}
	j.ApplyDefaults()
	h.renderJobForm(w, r, p, j, nil, nil, false)
}

func (h *Handler) jobEdit(w http.ResponseWriter, r *http.Request, p auth.Principal) {
	j, err := h.job(r, p)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.renderJobForm(w, r, p, j, nil, nil, false)
}

func (h *Handler) jobCopy(w http.ResponseWriter, r *http.Request, p auth.Principal) {
	j, err := h.job(r, p)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	j.ID, j.TriggerStatus, j.Name = 0, xjob.StatusStopped, "" // names are unique
	j.Description += " (copy)"
	h.renderJobForm(w, r, p, j, nil, nil, true)
}

// jobFromForm reads every job field of the form; bad numbers become
// problems (kept as typed in raw), so nothing is written.
func jobFromForm(r *http.Request, b base) (xjob.Job, map[string]string, map[string]string) {
	problems, raw := map[string]string{}, map[string]string{}
	num := func(name string) int {
		s := strings.TrimSpace(r.FormValue(name))
		if s == "" {
			return 0
		}
		v, err := strconv.Atoi(s)
		if err != nil {
			problems[name], raw[name] = fmt.Sprintf(b.T("not.number"), s), s
		}
		return v
	}
	j := xjob.Job{GroupID: formInt(r, "jobGroup"), Description: r.FormValue("jobDesc"), Author: r.FormValue("author"),
		Name:       strings.TrimSpace(r.FormValue("name")), // the key of xjob apply: a save must keep it
		AlarmEmail: r.FormValue("alarmEmail"), ScheduleType: xjob.ScheduleType(r.FormValue("scheduleType")),
		ScheduleConf: strings.TrimSpace(r.FormValue("scheduleConf")), TimeZone: strings.TrimSpace(r.FormValue("timeZone")),
		MisfireStrategy: xjob.MisfireStrategy(r.FormValue("misfireStrategy")),
		RouteStrategy:   xjob.RouteStrategy(r.FormValue("executorRouteStrategy")),
		Handler:         strings.TrimSpace(r.FormValue("executorHandler")), Param: r.FormValue("executorParam"),
		BlockStrategy: xjob.BlockStrategy(r.FormValue("executorBlockStrategy")), TimeoutSeconds: num("executorTimeout"),
		FailRetryCount: num("executorFailRetryCount"), GlueType: xjob.GlueType(r.FormValue("glueType")),
		GlueSource: r.FormValue("glueSource"), GlueRemark: r.FormValue("glueRemark")}
	if j.ScheduleType == xjob.ScheduleNone {
		j.ScheduleConf = "" // a NONE job keeps no stale cron
	}
	if j.GlueType != xjob.GlueBean && j.GlueType != "" {
		j.Handler = "" // GLUE jobs run their source
	}
	if j.GlueType == xjob.GlueHTTP {
		j.GlueSource = specFromForm(r, problems)
	}
	if j.GlueType == xjob.GlueAWS {
		j.GlueSource = awsSpecFromForm(r)
	}
	ids, err := xjob.ParseChildJobIDs(r.FormValue("childJobIds"))
	if err != nil {
		problems["childJobIds"], raw["childJobIds"] = err.Error(), r.FormValue("childJobIds")
	}
	j.ChildJobIDs = ids
	if r.FormValue("start") == "1" {
		j.TriggerStatus = xjob.StatusRunning
	}
	return j, problems, raw
}

func (h *Handler) jobSave(w http.ResponseWriter, r *http.Request, p auth.Principal) {
	b := h.base(r, p, "jobs")
	j, problems, raw := jobFromForm(r, b)
	id := pathInt(r, "id")
	var oldGlue xjob.GlueType
	if r.PathValue("id") != "" {
		old, err := h.job(r, p)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		j.ID, j.TriggerStatus = old.ID, old.TriggerStatus
		j.Version = formInt(r, "version")
		oldGlue = old.GlueType
	}
	if err := h.cfg.Auth.CheckGlue(p, oldGlue, j.GlueType); err != nil {
		h.fail(w, r, err)
		return
	}
	if id == 0 && j.GlueType.Script() && strings.TrimSpace(j.GlueSource) == "" {
		j.GlueSource, j.GlueRemark = glueHello[j.GlueType], "hello world"
	}
	if !p.CanGroup(j.GroupID) {
		problems["jobGroup"] = b.T("forbidden")
	}
	for _, c := range j.ChildJobIDs {
		if cj, err := h.cfg.Admin.GetJob(r.Context(), c); err == nil && !p.CanGroup(cj.GroupID) {
			problems["childJobIds"] = fmt.Sprintf("%d: %s", c, b.T("forbidden"))
		}
	}
	if len(problems) > 0 {
		// Show every other problem too, not only the form's own.
		check := j
		check.ApplyDefaults()
		var ve *xjob.ValidationError
		if err := check.Validate(); errors.As(err, &ve) {
			for _, pr := range ve.Problems {
				if _, seen := problems[pr.Field]; !seen {
					problems[pr.Field] = b.problem(pr.Field, pr.Message)
				}
			}
		}
		h.renderJobForm(w, r, p, j, problems, raw, false)
		return
	}
	var err error
	if id == 0 {
		_, err = h.cfg.Admin.CreateJob(r.Context(), j)
	} else {
		_, err = h.cfg.Admin.UpdateJob(r.Context(), admin.UpdateJobParams{Job: j, Version: j.Version})
	}
	var ve *xjob.ValidationError
	switch {
	case errors.As(err, &ve):
		for _, pr := range ve.Problems {
			problems[pr.Field] = b.problem(pr.Field, pr.Message)
		}
		h.renderJobForm(w, r, p, j, problems, raw, false)
		return
	case err != nil:
		h.fail(w, r, err)
		return
	}
	back(w, r, "/console/jobs?group="+itoa(j.GroupID), "saved")
}

// glueHello is the source a new GLUE job starts with (xxl-job's
// templates): a job that logs a line and succeeds.
var glueHello = map[xjob.GlueType]string{
	xjob.GlueShell:      "#!/bin/bash\necho \"xjob: hello world\"\necho \"param: $1\"\nexit 0\n",
	xjob.GluePython:     "#!/usr/bin/env python3\nimport sys\nprint(\"xjob: hello world\")\nprint(\"param:\", sys.argv[1:])\n",
	xjob.GluePython2:    "#!/usr/bin/env python2\nimport sys\nprint \"xjob: hello world\"\nprint \"param:\", sys.argv[1:]\n",
	xjob.GluePHP:        "<?php\necho \"xjob: hello world\\n\";\necho \"param: \" . ($argv[1] ?? \"\") . \"\\n\";\nexit(0);\n",
	xjob.GlueNodeJS:     "#!/usr/bin/env node\nconsole.log(\"xjob: hello world\");\nconsole.log(\"param:\", process.argv[2]);\n",
	xjob.GluePowerShell: "Write-Host \"xjob: hello world\"\nWrite-Host \"param: $($args[0])\"\nexit 0\n",
	xjob.GlueGroovy: "package com.xxl.job.service.handler;\n\nimport com.xxl.job.core.context.XxlJobHelper;\n" +
		"import com.xxl.job.core.handler.IJobHandler;\n\npublic class DemoGlueJobHandler extends IJobHandler {\n" +
		"\t@Override\n\tpublic void execute() throws Exception {\n\t\tXxlJobHelper.log(\"xjob: hello world\");\n\t}\n}\n",
}

// returnTo is where a row action goes back to: the list it came from.
func returnTo(r *http.Request) string {
	return safeNext(r.FormValue("return"))
}

func (h *Handler) jobAction(w http.ResponseWriter, r *http.Request, p auth.Principal, act func(*http.Request, int64) error) {
	j, err := h.job(r, p)
	if err == nil {
		err = act(r, j.ID)
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	back(w, r, returnTo(r), "done")
}

func (h *Handler) jobStart(w http.ResponseWriter, r *http.Request, p auth.Principal) {
	h.jobAction(w, r, p, func(r *http.Request, id int64) error { _, err := h.cfg.Admin.StartJob(r.Context(), id); return err })
}

func (h *Handler) jobStop(w http.ResponseWriter, r *http.Request, p auth.Principal) {
	h.jobAction(w, r, p, func(r *http.Request, id int64) error { _, err := h.cfg.Admin.StopJob(r.Context(), id); return err })
}

func (h *Handler) jobDelete(w http.ResponseWriter, r *http.Request, p auth.Principal) {
	h.jobAction(w, r, p, func(r *http.Request, id int64) error { return h.cfg.Admin.DeleteJob(r.Context(), id) })
}

// jobBulk starts or stops the selected jobs (each checked for
// permission); jobs of schedule type NONE cannot start and are named in
// the reply instead of failing the rest.
func (h *Handler) jobBulk(w http.ResponseWriter, r *http.Request, p auth.Principal) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	op := r.PostForm.Get("op")
	var skipped []string
	for _, s := range r.PostForm["id"] {
		id, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			continue
		}
		j, err := h.cfg.Admin.GetJob(r.Context(), id)
		if err == nil {
			err = forbidden(p, j.GroupID)
		}
		if err == nil {
			if op == "start" {
				_, err = h.cfg.Admin.StartJob(r.Context(), id)
			} else {
				_, err = h.cfg.Admin.StopJob(r.Context(), id)
			}
		}
		var ve *xjob.ValidationError
		if errors.As(err, &ve) && j.ScheduleType == xjob.ScheduleNone {
			skipped = append(skipped, itoa(j.ID))
			continue
		}
		if err != nil {
			h.fail(w, r, err)
			return
		}
	}
	// The skipped jobs travel as ids, named again by the list page (only
	// what the user may see), so no free text rides in the URL.
	to := returnTo(r)
	if len(skipped) > 0 {
		sep := "?"
		if strings.Contains(to, "?") {
			sep = "&"
		}
		to += sep + "skipped=" + strings.Join(skipped, ",")
	}
	back(w, r, to, "done")
}

type triggerPage struct {
	base
	Job    xjob.Job
	Return string
}

func (h *Handler) triggerPage(w http.ResponseWriter, r *http.Request, p auth.Principal) {
	j, err := h.job(r, p)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.render(w, r, "trigger", triggerPage{base: h.base(r, p, "trigger"), Job: j,
		Return: safeNext(r.URL.Query().Get("return"))})
}

func (h *Handler) trigger(w http.ResponseWriter, r *http.Request, p auth.Principal) {
	j, err := h.job(r, p)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	b := h.base(r, p, "")
	param := r.FormValue("executorParam")
	tp := admin.TriggerParams{JobID: j.ID, Param: &param}
	for _, a := range text.SplitList(r.FormValue("addressList")) {
		var ve *xjob.ValidationError
		if err := xjob.ValidateAddress(a); errors.As(err, &ve) {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintln(w, b.lead("err.invalid", b.problemsText(ve.Problems)))
			return
		}
		tp.AddressList = append(tp.AddressList, a)
	}
	if _, err := h.cfg.Admin.TriggerJob(r.Context(), tp); err != nil {
		h.fail(w, r, err)
		return
	}
	back(w, r, "/console/logs?job="+itoa(j.ID)+"&group="+itoa(j.GroupID), "triggered")
}

// ----- schedule preview

type previewData struct {
	Times []string
	Error string
	// Note replaces the times of a schedule that has none to list.
	Note string
}

func (h *Handler) previewOf(b base, typ xjob.ScheduleType, conf, tz string) previewData {
	if typ == xjob.ScheduleNone || typ == "" {
		return previewData{}
	}
	if tz == "" {
		tz = "UTC"
	}
	j := xjob.Job{ScheduleType: typ, ScheduleConf: conf, TimeZone: tz}
	loc, err := time.LoadLocation(tz)
	if err != nil || tz == "Local" {
		return previewData{Error: b.field("timeZone") + b.T("sep") + b.problem("timeZone", fmt.Sprintf("%q is not an IANA time zone", tz))}
	}
	sched, err := j.Schedule()
	if err != nil {
		return previewData{Error: b.field("scheduleConf") + b.T("sep") + b.problem("scheduleConf", err.Error())}
	}
	if _, ok := sched.(schedule.FixDelay); ok {
		// No times to list: each fire comes a delay after the previous run ends.
		return previewData{Note: b.T("after.run.each")}
	}
	ts, err := schedule.Preview(sched, h.cfg.Clock.Now().In(loc), admin.DefaultPreviewCount)
	if err != nil && !errors.Is(err, schedule.ErrNoSchedule) {
		return previewData{Error: b.problem("scheduleConf", err.Error())}
	}
	var out previewData
	for _, t := range ts {
		out.Times = append(out.Times, t.In(loc).Format("2006-01-02 15:04:05 MST"))
	}
	return out
}

// preview is the htmx fragment under the schedule fields (and the job
// list's "next fires" popup).
func (h *Handler) preview(w http.ResponseWriter, r *http.Request, p auth.Principal) {
	b := h.base(r, p, "jobs")
	d := struct {
		base
		Preview previewData
	}{b, h.previewOf(b, xjob.ScheduleType(r.FormValue("scheduleType")), strings.TrimSpace(r.FormValue("scheduleConf")),
		strings.TrimSpace(r.FormValue("timeZone")))}
	h.render(w, r, "preview", d)
}

// jobOptions is the log filter's job search: up to 20 jobs of a group
// whose description holds q, or the job whose id is q.
func (h *Handler) jobOptions(w http.ResponseWriter, r *http.Request, p auth.Principal) {
	q := strings.TrimSpace(r.URL.Query().Get("job"))
	group, _ := strconv.ParseInt(r.URL.Query().Get("group"), 10, 64)
	if group != 0 {
		if err := forbidden(p, group); err != nil {
			h.fail(w, r, err)
			return
		}
	} else if !p.Admin() {
		h.render(w, r, "joboptions", struct{ Jobs []xjob.Job }{})
		return
	}
	lp := admin.ListJobsParams{GroupID: group, Description: q, Limit: 20}
	if _, err := strconv.ParseInt(q, 10, 64); err == nil {
		lp.Description = ""
	}
	page, err := h.cfg.Admin.ListJobs(r.Context(), lp)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.render(w, r, "joboptions", struct{ Jobs []xjob.Job }{page.Jobs})
}

// groupExecutors is the job list's "registry" popup: a group's listed
// and live addresses.
func (h *Handler) groupExecutors(w http.ResponseWriter, r *http.Request, p auth.Principal) {
	id := pathInt(r, "id")
	if err := forbidden(p, id); err != nil {
		h.fail(w, r, err)
		return
	}
	g, err := h.cfg.Admin.GetGroup(r.Context(), id)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	es, err := h.cfg.Admin.GroupExecutors(r.Context(), id)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	rows := make([]executorRow, 0, len(es))
	live := map[string]bool{}
	for _, e := range es {
		rows = append(rows, executorRow{Address: e.Address, Heartbeat: e.UpdatedAt})
		live[addressKey(e.Address)] = true
	}
	// An automatic group's address list is its live executors, listed
	// above with their heartbeats; a manual group's typed addresses are
	// listed once, a registered one with its heartbeat.
	var typed []string
	if g.AddressType == xjob.AddressManual {
		for _, a := range g.AddressList {
			if !live[addressKey(a)] {
				typed = append(typed, a)
			}
		}
	}
	h.render(w, r, "executors", struct {
		base
		Typed []string
		Rows  []executorRow
	}{h.base(r, p, "jobs"), typed, rows})
}

// addressKey is how two spellings of one executor address compare equal
// (a trailing slash makes no difference), as in package egress.
func addressKey(a string) string { return strings.TrimRight(strings.TrimSpace(a), "/") }
