package harness

import (
	"math"
	"slices"
)

// LogRow is the part of a trigger log the analysis needs: it maps the log id
// an executor receives to the scheduled fire time the scheduler planned.
type LogRow struct {
	ID          int64
	JobID       int64
	Scheduled   int64 // Unix ms: the occurrence's fire time
	TriggerType string
	TriggerCode int
	TriggerMsg  string
}

// Interval is a half-open span of Unix milliseconds.
type Interval struct {
	From int64 `json:"from"`
	To   int64 `json:"to"`
}

func (iv Interval) contains(t int64) bool { return t >= iv.From && t < iv.To }

// Expectation is the schedule the workload promises: every job fires at
// every multiple of Period within Window.
type Expectation struct {
	Jobs   []int64
	Window Interval
	Period int64 // ms
	// Outages are spans in which xjob was down or not yet scanning again
	// (chaos): a fire planned there that never came is counted as Skipped —
	// xxl-job's misfire and late-collapse rules drop such fires by design —
	// and not as Lost.
	Outages []Interval
	// Passed maps a job to the spans of scheduled times xjob's scan
	// reported passing over by policy (misfire, or a late fire collapsing
	// the ones after it; the "scan: fires passed over" debug lines). A fire
	// never received inside such a span is Misfired, not Lost.
	Passed map[int64][]Interval
	// Pending holds the (job, fire time) pairs still queued in xjob when the
	// run stopped (ReadPending): late, not lost.
	Pending map[[2]int64]bool
	// Each, when set, replaces the periodic schedule: job → its own fire
	// times (Unix ms) within Window (the spread one-shot workload).
	Each map[int64][]int64
	// Grace, when set (ms), makes Fired and Rate count only the pairs whose
	// first receipt came before Window.To + Grace: a fire received later
	// was drained from a backlog after the window, so counting it would
	// report a rate xjob did not sustain. Those are FiredLate instead.
	Grace int64
}

// Fires lists the expected fire times.
func (e Expectation) Fires() []int64 {
	if e.Period <= 0 {
		return nil
	}
	first := (e.Window.From + e.Period - 1) / e.Period * e.Period
	var ts []int64
	for t := first; t < e.Window.To; t += e.Period {
		ts = append(ts, t)
	}
	return ts
}

// Outcome is what the receipts say about an expectation.
type Outcome struct {
	Expected int `json:"expected"`
	// Fired counts (job, fire time) pairs received at least once — with a
	// Grace, only those received by the window's end + Grace.
	Fired int `json:"fired"`
	// FiredLate counts pairs first received after the window's end + Grace
	// (a backlog drained after the window: late, not lost, not sustained).
	FiredLate int `json:"firedLate"`
	// DrainSeconds is how long after the window's end the last of its
	// pairs was first received (0 when all came within the window).
	DrainSeconds float64 `json:"drainSeconds"`
	// ReceivedInWindow counts the distinct logs of the workload's jobs the
	// executor received within [Window.From, Window.To), whatever their
	// scheduled time: the work xjob did in the window (CPU per trigger).
	ReceivedInWindow int `json:"receivedInWindow"`
	Lost             int `json:"lost"` // expected, never received, neither misfired by policy nor in an outage
	// Misfired counts expected fires never received that xjob reported
	// passing over by its misfire / late-collapse rules (Expectation.Passed):
	// overload made visible, not lost.
	Misfired int `json:"misfired"`
	// Pending counts expected fires never received that were still queued
	// in xjob when the run stopped (a backlog: late beyond the wait, not
	// lost).
	Pending    int `json:"pending"`
	Skipped    int `json:"skipped"`    // expected, never received, planned during an outage
	Duplicates int `json:"duplicates"` // receipts beyond the first per (job, fire time)
	// DuplicateLogs counts (job, fire time) pairs with more than one trigger
	// log: the occurrence-id dedupe failed (a subset of the causes of
	// Duplicates; the other is one log delivered twice).
	DuplicateLogs   int `json:"duplicateLogs"`
	Misfires        int `json:"misfireFires"` // fires triggered as MISFIRE (FIRE_ONCE_NOW)
	TriggerFailures int `json:"triggerFailures"`
	// FailedTriggerMsgs are the trigger messages of the first failed
	// triggers (at most 3), to tell an executor that refused or could
	// not be reached from one the scheduler never called.
	FailedTriggerMsgs []string `json:"failedTriggerMsgs,omitempty"`
	Unmatched         int      `json:"unmatchedReceipts"` // receipts whose log id is unknown
	// Lateness is receive time − scheduled fire time of the first receipt
	// of each fired pair, in milliseconds.
	LatenessP50 float64 `json:"latenessP50Ms"`
	LatenessP90 float64 `json:"latenessP90Ms"`
	LatenessP99 float64 `json:"latenessP99Ms"`
	LatenessMax float64 `json:"latenessMaxMs"`
	// InTimePct is the share of the expected fires first received within
	// InTimeMs of their fire time: the goal's measure ("99.9 % within
	// 1 s"), which a p99 does not tell.
	InTimePct float64 `json:"inTimePct"`
	// WindowSeconds and Rate: fired pairs per second of window.
	// LostAt counts lost fires per scheduled second (Unix seconds), to
	// tell a stall from a steady leak.
	LostAt        map[int64]int `json:"lostAt,omitempty"`
	WindowSeconds float64       `json:"windowSeconds"`
	Rate          float64       `json:"triggersPerSecond"`
}

type pairKey struct{ job, t int64 }

// Analyze matches receipts to logs and logs to the expected schedule.
// Receipts and logs outside the window or for other jobs are ignored.
func Analyze(exp Expectation, logs []LogRow, receipts []Receipt) Outcome {
	jobs := make(map[int64]bool, len(exp.Jobs))
	for _, j := range exp.Jobs {
		jobs[j] = true
	}
	fires := exp.Fires()
	firesOf := func(j int64) []int64 {
		if exp.Each != nil {
			return exp.Each[j]
		}
		return fires
	}
	out := Outcome{}
	for j := range jobs {
		for _, t := range firesOf(j) {
			if exp.Window.contains(t) {
				out.Expected++
			}
		}
	}
	out.WindowSeconds = float64(exp.Window.To-exp.Window.From) / 1000

	byID := make(map[int64]LogRow, len(logs))
	logsPer := make(map[pairKey]int)
	for _, l := range logs {
		byID[l.ID] = l
		if !jobs[l.JobID] || !exp.Window.contains(l.Scheduled) {
			continue
		}
		logsPer[pairKey{l.JobID, l.Scheduled}]++
		if l.TriggerType == "MISFIRE" {
			out.Misfires++
		}
		if l.TriggerCode != 200 && l.TriggerCode != 0 {
			out.TriggerFailures++
			if len(out.FailedTriggerMsgs) < 3 {
				out.FailedTriggerMsgs = append(out.FailedTriggerMsgs, l.TriggerMsg)
			}
		}
	}
	for _, n := range logsPer {
		if n > 1 {
			out.DuplicateLogs++
		}
	}

	first := make(map[pairKey]int64, out.Expected)
	seen := make(map[int64]bool)
	for _, r := range receipts {
		if jobs[r.JobID] && r.At >= exp.Window.From*1000 && r.At < exp.Window.To*1000 && !seen[r.LogID] {
			seen[r.LogID] = true
			out.ReceivedInWindow++
		}
		l, ok := byID[r.LogID]
		if !ok {
			if jobs[r.JobID] {
				out.Unmatched++
			}
			continue
		}
		if !jobs[l.JobID] || !exp.Window.contains(l.Scheduled) {
			continue
		}
		k := pairKey{l.JobID, l.Scheduled}
		if at, seen := first[k]; seen {
			out.Duplicates++
			if r.At < at {
				first[k] = r.At
			}
			continue
		}
		first[k] = r.At
	}
	late := make([]float64, 0, len(first))
	var lastAt int64
	inTime := 0
	for k, at := range first {
		late = append(late, float64(at-k.t*1000)/1000)
		if at-k.t*1000 <= InTimeMs*1000 {
			inTime++
		}
		lastAt = max(lastAt, at)
		if exp.Grace > 0 && at >= (exp.Window.To+exp.Grace)*1000 {
			out.FiredLate++
		}
	}
	out.Fired = len(first) - out.FiredLate
	if d := lastAt - exp.Window.To*1000; d > 0 {
		out.DrainSeconds = round1(float64(d) / 1e6)
	}
	for j := range jobs {
		for _, t := range firesOf(j) {
			if !exp.Window.contains(t) {
				continue
			}
			if _, ok := first[pairKey{j, t}]; ok {
				continue
			}
			switch {
			case inAny(exp.Passed[j], t):
				out.Misfired++
			case exp.Pending[[2]int64{j, t}]:
				out.Pending++
			case inAny(exp.Outages, t):
				out.Skipped++
			default:
				out.Lost++
				if out.LostAt == nil {
					out.LostAt = make(map[int64]int)
				}
				out.LostAt[t/1000]++
			}
		}
	}
	if out.Expected > 0 {
		out.InTimePct = math.Round(100_000*float64(inTime)/float64(out.Expected)) / 1000
	}
	slices.Sort(late)
	out.LatenessP50 = quantile(late, 0.50)
	out.LatenessP90 = quantile(late, 0.90)
	out.LatenessP99 = quantile(late, 0.99)
	if len(late) > 0 {
		out.LatenessMax = round1(late[len(late)-1])
	}
	if out.WindowSeconds > 0 {
		out.Rate = round1(float64(out.Fired) / out.WindowSeconds)
	}
	return out
}

func inAny(ivs []Interval, t int64) bool {
	for _, iv := range ivs {
		if iv.contains(t) {
			return true
		}
	}
	return false
}

// quantile is the nearest-rank quantile of sorted values.
func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return round1(sorted[max(0, min(i, len(sorted)-1))])
}

func round1(v float64) float64 { return math.Round(v*10) / 10 }

// Durations summarises a sample of durations in milliseconds.
type Durations struct {
	N    int     `json:"n"`
	Mean float64 `json:"meanMs"`
	P50  float64 `json:"p50Ms"`
	P99  float64 `json:"p99Ms"`
	Max  float64 `json:"maxMs"`
}

// Summarise computes Durations of ms values.
func Summarise(ms []float64) Durations {
	if len(ms) == 0 {
		return Durations{}
	}
	s := slices.Clone(ms)
	slices.Sort(s)
	var sum float64
	for _, v := range s {
		sum += v
	}
	return Durations{N: len(s), Mean: round1(sum / float64(len(s))), P50: quantile(s, 0.5), P99: quantile(s, 0.99), Max: round1(s[len(s)-1])}
}
