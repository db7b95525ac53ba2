package console

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/driver"
	"github.com/xjobdev/xjob/internal/admin"
	"github.com/xjobdev/xjob/internal/scheduler/schedule"
	"github.com/xjobdev/xjob/internal/web/auth"
)

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

func formInt(r *http.Request, name string) int64 {
	v, _ := strconv.ParseInt(strings.TrimSpace(r.FormValue(name)), 10, 64)
	return v
}

func pathInt(r *http.Request, name string) int64 {
	v, _ := strconv.ParseInt(r.PathValue(name), 10, 64)
	return v
}

// fail answers an action's error: forbidden and missing records get their
// status, anything else is a server error.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	var ve *xjob.ValidationError
	switch {
	case errors.Is(err, auth.ErrForbidden):
		http.Error(w, "forbidden: "+err.Error(), http.StatusForbidden)
	case errors.Is(err, xjob.ErrNotFound):
		http.Error(w, err.Error(), http.StatusNotFound)
	case errors.Is(err, xjob.ErrConflict), errors.As(err, &ve), errors.Is(err, admin.ErrExecutor):
		http.Error(w, err.Error(), http.StatusConflict)
	default:
		h.serverError(w, r, err)
	}
}

func forbidden(p auth.Principal, group int64) error {
	if p.CanGroup(group) {
		return nil
	}
	return fmt.Errorf("user %s, executor group %d: %w", p.Name(), group, auth.ErrForbidden)
}

// job loads a job the principal may act on.
func (h *Handler) job(r *http.Request, p auth.Principal) (xjob.Job, error) {
	j, err := h.cfg.Admin.GetJob(r.Context(), pathInt(r, "id"))
	if err != nil {
		return xjob.Job{}, err
	}
	return j, forbidden(p, j.GroupID)
}

// groups lists the groups p may see.
func (h *Handler) visibleGroups(r *http.Request, p auth.Principal) ([]xjob.Group, error) {
	gs, err := h.cfg.Admin.ListGroups(r.Context(), driver.GroupListParams{})
	if err != nil {
		return nil, err
	}
	out := gs[:0]
	for _, g := range gs {
		if p.CanGroup(g.ID) {
			out = append(out, g)
		}
	}
	return out, nil
}

// ----- sign-in

type loginPage struct {
	base
	Next, Username string
}

func (h *Handler) loginPage(w http.ResponseWriter, r *http.Request) {
	b := h.base(r, auth.Principal{}, "login")
	h.render(w, r, "login", loginPage{base: b, Next: safeNext(r.URL.Query().Get("next"))})
}

func (h *Handler) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	name, pw := strings.TrimSpace(r.PostFormValue("username")), r.PostFormValue("password")
	_, err := h.cfg.Auth.SignIn(w, r, name, pw)
	if err == nil {
		back(w, r, safeNext(r.PostFormValue("next")), "")
		return
	}
	if !errors.Is(err, auth.ErrTooManyAttempts) && !errors.Is(err, auth.ErrBadCredentials) && !errors.Is(err, auth.ErrCSRF) {
		h.serverError(w, r, err)
		return
	}
	auth.AuditAuthFailure(r.Context(), h.cfg.Logger, r, "login", err.Error(), slog.String("username", name))
	b := h.base(r, auth.Principal{}, "login")
	switch {
	case errors.Is(err, auth.ErrTooManyAttempts):
		b.Error = b.T("login.slow")
		w.WriteHeader(http.StatusTooManyRequests)
	case errors.Is(err, auth.ErrBadCredentials), errors.Is(err, auth.ErrCSRF):
		b.Error = b.T("login.bad")
		w.WriteHeader(http.StatusUnauthorized)
	default:
		h.serverError(w, r, err)
		return
	}
	h.render(w, r, "login", loginPage{base: b, Next: safeNext(r.PostFormValue("next")), Username: name})
}

func (h *Handler) logout(w http.ResponseWriter, r *http.Request, _ auth.Principal) {
	h.cfg.Auth.SignOut(w, r)
	http.Redirect(w, r, "/console/login", http.StatusSeeOther)
}

// ----- dashboard

type dayBar struct {
	Day                  string
	Suc, Fail, Run       int
	X, W, YS, HS, YF, HF float64
	YR, HR               float64
	Label                bool
}

type dashboardPage struct {
	base
	Jobs, Online, Today, Total int
	Days                       int
	Bars                       []dayBar
	Max                        int
	Failures                   []xjob.Log
}

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
	for _, g := range gs {
		page, err := h.cfg.Admin.ListJobs(ctx, driver.JobListParams{GroupID: g.ID, Limit: 1000})
		if err != nil {
			h.serverError(w, r, err)
			return
		}
		d.Jobs += len(page.Jobs)
		if es, err := h.cfg.Admin.GroupExecutors(ctx, g.ID); err == nil {
			d.Online += len(es)
		}
		if len(d.Failures) < 10 {
			lp, err := h.cfg.Admin.ListLogs(ctx, driver.LogListParams{GroupID: g.ID, Status: xjob.LogFail, Limit: 10})
			if err == nil {
				d.Failures = append(d.Failures, lp.Logs...)
			}
		}
	}
	if len(d.Failures) > 10 {
		d.Failures = d.Failures[:10]
	}
	today := h.cfg.Clock.Now().UTC()
	days, err := h.cfg.Admin.Report(ctx, today.AddDate(0, 0, -(d.Days-1)).Format(time.DateOnly), today.Format(time.DateOnly))
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	for _, day := range days {
		n := day.SucCount + day.FailCount + day.RunningCount
		d.Total += n
		d.Max = max(d.Max, n)
		if day.Day == today.Format(time.DateOnly) {
			d.Today = n
		}
	}
	// Bars of a 600×200 chart, stacked success / failure / running.
	const width, height = 600.0, 180.0
	slot := width / float64(max(len(days), 1))
	scale := height / float64(max(d.Max, 1))
	for i, day := range days {
		b := dayBar{Day: day.Day[5:], Suc: day.SucCount, Fail: day.FailCount, Run: day.RunningCount,
			X: float64(i)*slot + slot*0.15, W: slot * 0.7, Label: len(days) <= 14 || i%(len(days)/7+1) == 0}
		b.HS, b.HF, b.HR = float64(b.Suc)*scale, float64(b.Fail)*scale, float64(b.Run)*scale
		b.YS = height - b.HS
		b.YF = b.YS - b.HF
		b.YR = b.YF - b.HR
		d.Bars = append(d.Bars, b)
	}
	h.render(w, r, "dashboard", d)
}

// ----- jobs

type jobsPage struct {
	base
	Groups                                      []xjob.Group
	Group                                       int64
	Status, Desc, Handler, Author, Cursor, Next string
	Jobs                                        []xjob.Job
	GroupNames                                  map[int64]string
}

func (h *Handler) jobs(w http.ResponseWriter, r *http.Request, p auth.Principal) {
	q := r.URL.Query()
	d := jobsPage{base: h.base(r, p, "jobs"), Status: q.Get("status"), Desc: q.Get("desc"),
		Handler: q.Get("handler"), Author: q.Get("author"), GroupNames: map[int64]string{}}
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
	if !p.Admin() && len(gs) == 0 {
		h.render(w, r, "jobs", d)
		return
	}
	lp := driver.JobListParams{GroupID: d.Group, Description: d.Desc, Handler: d.Handler, Author: d.Author,
		Cursor: q.Get("cursor"), Limit: 50}
	if st, err := strconv.Atoi(d.Status); err == nil && (st == 0 || st == 1) {
		s := xjob.TriggerStatus(st)
		lp.Status = &s
	}
	page, err := h.cfg.Admin.ListJobs(r.Context(), lp)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	d.Jobs, d.Next = page.Jobs, page.Next
	h.render(w, r, "jobs", d)
}

type jobForm struct {
	base
	Job      xjob.Job
	Copy     bool
	Groups   []xjob.Group
	Problems map[string]string
	Preview  previewData
	Enums    enums
}

type enums struct {
	Schedule []xjob.ScheduleType
	Misfire  []xjob.MisfireStrategy
	Route    []xjob.RouteStrategy
	Block    []xjob.BlockStrategy
	Glue     []xjob.GlueType
}

var allEnums = enums{
	Schedule: []xjob.ScheduleType{xjob.ScheduleCron, xjob.ScheduleFixRate, xjob.ScheduleNone},
	Misfire:  []xjob.MisfireStrategy{xjob.MisfireDoNothing, xjob.MisfireFireOnceNow},
	Route: []xjob.RouteStrategy{xjob.RouteFirst, xjob.RouteLast, xjob.RouteRound, xjob.RouteRandom,
		xjob.RouteConsistentHash, xjob.RouteLeastFrequentlyUsed, xjob.RouteLeastRecentlyUsed, xjob.RouteFailover,
		xjob.RouteBusyover, xjob.RouteShardingBroadcast},
	Block: []xjob.BlockStrategy{xjob.BlockSerialExecution, xjob.BlockDiscardLater, xjob.BlockCoverEarly},
	Glue: []xjob.GlueType{xjob.GlueBean, xjob.GlueShell, xjob.GluePython, xjob.GluePython2, xjob.GlueNodeJS,
		xjob.GluePHP, xjob.GluePowerShell, xjob.GlueGroovy},
}

func (h *Handler) renderJobForm(w http.ResponseWriter, r *http.Request, p auth.Principal, j xjob.Job, problems map[string]string, cp bool) {
	gs, err := h.visibleGroups(r, p)
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	d := jobForm{base: h.base(r, p, "jobs"), Job: j, Copy: cp, Groups: gs, Problems: problems, Enums: allEnums}
	d.Preview = h.previewOf(d.base, j.ScheduleType, j.ScheduleConf, j.TimeZone)
	h.render(w, r, "jobform", d)
}

func (h *Handler) jobNew(w http.ResponseWriter, r *http.Request, p auth.Principal) {
	j := xjob.Job{ScheduleType: xjob.ScheduleCron, ScheduleConf: "0 0/5 * * * ?", TimeZone: "UTC", GlueType: xjob.GlueBean,
		Author: p.Name(), GroupID: formInt(r, "group")}
	j.ApplyDefaults()
	h.renderJobForm(w, r, p, j, nil, false)
}

func (h *Handler) jobEdit(w http.ResponseWriter, r *http.Request, p auth.Principal) {
	j, err := h.job(r, p)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.renderJobForm(w, r, p, j, nil, false)
}

func (h *Handler) jobCopy(w http.ResponseWriter, r *http.Request, p auth.Principal) {
	j, err := h.job(r, p)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	j.ID, j.TriggerStatus = 0, xjob.StatusStopped
	j.Description += " (copy)"
	h.renderJobForm(w, r, p, j, nil, true)
}

// jobFromForm reads every job field of the form; bad numbers become
// problems, so nothing is written.
func jobFromForm(r *http.Request) (xjob.Job, map[string]string) {
	problems := map[string]string{}
	num := func(name string) int {
		s := strings.TrimSpace(r.FormValue(name))
		if s == "" {
			return 0
		}
		v, err := strconv.Atoi(s)
		if err != nil {
			problems[name] = fmt.Sprintf("%q is not a number", s)
		}
		return v
	}
	j := xjob.Job{GroupID: formInt(r, "jobGroup"), Description: r.FormValue("jobDesc"), Author: r.FormValue("author"),
		AlarmEmail: r.FormValue("alarmEmail"), ScheduleType: xjob.ScheduleType(r.FormValue("scheduleType")),
		ScheduleConf: strings.TrimSpace(r.FormValue("scheduleConf")), TimeZone: strings.TrimSpace(r.FormValue("timeZone")),
		MisfireStrategy: xjob.MisfireStrategy(r.FormValue("misfireStrategy")),
		RouteStrategy:   xjob.RouteStrategy(r.FormValue("executorRouteStrategy")),
		Handler:         strings.TrimSpace(r.FormValue("executorHandler")), Param: r.FormValue("executorParam"),
		BlockStrategy: xjob.BlockStrategy(r.FormValue("executorBlockStrategy")), TimeoutSeconds: num("executorTimeout"),
		FailRetryCount: num("executorFailRetryCount"), GlueType: xjob.GlueType(r.FormValue("glueType")),
		GlueSource: r.FormValue("glueSource"), GlueRemark: r.FormValue("glueRemark")}
	ids, err := xjob.ParseChildJobIDs(r.FormValue("childJobIds"))
	if err != nil {
		problems["childJobIds"] = err.Error()
	}
	j.ChildJobIDs = ids
	if r.FormValue("start") == "1" {
		j.TriggerStatus = xjob.StatusRunning
	}
	return j, problems
}

func (h *Handler) jobSave(w http.ResponseWriter, r *http.Request, p auth.Principal) {
	j, problems := jobFromForm(r)
	id := pathInt(r, "id")
	if r.PathValue("id") != "" {
		old, err := h.job(r, p)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		j.ID, j.TriggerStatus = old.ID, old.TriggerStatus
		j.Version = formInt(r, "version")
	}
	if !p.CanGroup(j.GroupID) {
		problems["jobGroup"] = h.base(r, p, "").T("forbidden")
	}
	for _, c := range j.ChildJobIDs {
		if cj, err := h.cfg.Admin.GetJob(r.Context(), c); err == nil && !p.CanGroup(cj.GroupID) {
			problems["childJobIds"] = fmt.Sprintf("job %d: %s", c, h.base(r, p, "").T("forbidden"))
		}
	}
	if len(problems) > 0 {
		h.renderJobForm(w, r, p, j, problems, false)
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
			problems[pr.Field] = pr.Message
		}
		h.renderJobForm(w, r, p, j, problems, false)
		return
	case err != nil:
		h.fail(w, r, err)
		return
	}
	back(w, r, "/console/jobs?group="+itoa(j.GroupID), h.base(r, p, "").T("saved"))
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
	back(w, r, returnTo(r), h.base(r, p, "").T("done"))
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

// jobBulk starts or stops the selected jobs (each checked for permission).
func (h *Handler) jobBulk(w http.ResponseWriter, r *http.Request, p auth.Principal) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	op := r.PostForm.Get("op")
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
		if err != nil && !errors.As(err, &ve) { // a NONE job cannot start: skip it
			h.fail(w, r, err)
			return
		}
	}
	back(w, r, returnTo(r), h.base(r, p, "").T("done"))
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
	h.render(w, r, "trigger", triggerPage{base: h.base(r, p, "jobs"), Job: j, Return: safeNext(r.URL.Query().Get("return"))})
}

func (h *Handler) trigger(w http.ResponseWriter, r *http.Request, p auth.Principal) {
	j, err := h.job(r, p)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	param := r.FormValue("executorParam")
	tp := admin.TriggerParams{JobID: j.ID, Param: &param}
	for _, a := range xjob.SplitList(r.FormValue("addressList")) {
		if err := xjob.ValidateAddress(a); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		tp.AddressList = append(tp.AddressList, a)
	}
	if _, err := h.cfg.Admin.TriggerJob(r.Context(), tp); err != nil {
		h.fail(w, r, err)
		return
	}
	back(w, r, "/console/logs?job="+itoa(j.ID)+"&group="+itoa(j.GroupID), h.base(r, p, "").T("triggered"))
}

// ----- schedule preview

type previewData struct {
	Times []string
	Error string
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
		return previewData{Error: fmt.Sprintf("%q is not an IANA time zone", tz)}
	}
	sched, err := j.Schedule()
	if err != nil {
		return previewData{Error: err.Error()}
	}
	ts, err := schedule.Preview(sched, h.cfg.Clock.Now().In(loc), admin.DefaultPreviewCount)
	if err != nil && !errors.Is(err, schedule.ErrNoSchedule) {
		return previewData{Error: err.Error()}
	}
	var out previewData
	for _, t := range ts {
		out.Times = append(out.Times, t.In(loc).Format("2006-01-02 15:04:05 MST"))
	}
	return out
}

// preview is the htmx fragment under the schedule fields.
func (h *Handler) preview(w http.ResponseWriter, r *http.Request, p auth.Principal) {
	b := h.base(r, p, "jobs")
	d := struct {
		base
		Preview previewData
	}{b, h.previewOf(b, xjob.ScheduleType(r.FormValue("scheduleType")), strings.TrimSpace(r.FormValue("scheduleConf")),
		strings.TrimSpace(r.FormValue("timeZone")))}
	h.render(w, r, "preview", d)
}

// ----- GLUE

type gluePage struct {
	base
	Job      xjob.Job
	Versions []xjob.GlueVersion
	Source   string
	Problem  string
}

func (h *Handler) gluePage(w http.ResponseWriter, r *http.Request, p auth.Principal) {
	j, err := h.job(r, p)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	vs, err := h.cfg.Admin.GlueVersions(r.Context(), j.ID)
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	d := gluePage{base: h.base(r, p, "glue"), Job: j, Versions: vs, Source: j.GlueSource}
	if v, err := strconv.Atoi(r.URL.Query().Get("version")); err == nil && v >= 0 && v < len(vs) {
		d.Source = vs[v].Source
	}
	h.render(w, r, "glue", d)
}

func (h *Handler) glueSave(w http.ResponseWriter, r *http.Request, p auth.Principal) {
	j, err := h.job(r, p)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if j.GlueType == xjob.GlueBean {
		http.Error(w, "BEAN jobs have no GLUE source", http.StatusBadRequest)
		return
	}
	src, remark := strings.ReplaceAll(r.FormValue("glueSource"), "\r", ""), strings.TrimSpace(r.FormValue("glueRemark"))
	if n := len([]rune(remark)); n < 4 || n > 100 {
		d := gluePage{base: h.base(r, p, "glue"), Job: j, Source: src, Problem: "remark: 4 to 100 characters"}
		if d.Versions, err = h.cfg.Admin.GlueVersions(r.Context(), j.ID); err != nil {
			h.serverError(w, r, err)
			return
		}
		h.render(w, r, "glue", d)
		return
	}
	if _, err := h.cfg.Admin.SaveGlue(r.Context(), j, src, remark); err != nil {
		h.fail(w, r, err)
		return
	}
	back(w, r, "/console/jobs/"+itoa(j.ID)+"/glue", h.base(r, p, "").T("saved"))
}
