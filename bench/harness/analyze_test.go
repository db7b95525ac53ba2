package harness

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestAnalyze(t *testing.T) {
	t.Parallel()
	// Two jobs, window [10 s, 13 s): fires at 10, 11, 12 s.
	exp := Expectation{Jobs: []int64{1, 2}, Window: Interval{From: 10_000, To: 13_000}, Period: 1000}
	logs := []LogRow{
		{ID: 100, JobID: 1, Scheduled: 10_000, TriggerType: "CRON", TriggerCode: 200},
		{ID: 101, JobID: 1, Scheduled: 11_000, TriggerType: "CRON", TriggerCode: 200},
		{ID: 102, JobID: 1, Scheduled: 12_000, TriggerType: "MISFIRE", TriggerCode: 200},
		{ID: 103, JobID: 2, Scheduled: 10_000, TriggerType: "CRON", TriggerCode: 200},
		{ID: 104, JobID: 2, Scheduled: 10_000, TriggerType: "CRON", TriggerCode: 200}, // second log: dedupe failed
		{ID: 105, JobID: 2, Scheduled: 12_000, TriggerType: "CRON", TriggerCode: 500},
		{ID: 106, JobID: 2, Scheduled: 13_000, TriggerType: "CRON", TriggerCode: 200}, // outside the window
	}
	ms := func(v int64) int64 { return v * 1000 }
	receipts := []Receipt{
		{JobID: 1, LogID: 100, At: ms(10_005)},
		{JobID: 1, LogID: 100, At: ms(10_050)}, // same log twice
		{JobID: 1, LogID: 101, At: ms(11_010)},
		{JobID: 1, LogID: 102, At: ms(12_020)},
		{JobID: 2, LogID: 103, At: ms(10_001)},
		{JobID: 2, LogID: 104, At: ms(10_002)},
		{JobID: 2, LogID: 106, At: ms(13_001)},
		{JobID: 2, LogID: 999, At: ms(13_001)}, // unknown log
	}
	tests := []struct {
		name     string
		outages  []Interval
		passed   map[int64][]Interval
		lost     int
		skipped  int
		misfired int
	}{
		{name: "no outage: job 2 at 11 s and 12 s lost", lost: 2},
		{name: "outage over 11 s: skipped, not lost", outages: []Interval{{From: 10_500, To: 11_500}}, lost: 1, skipped: 1},
		{name: "xjob passed job 2's 11 s over: misfired, not lost", passed: map[int64][]Interval{2: {{From: 11_000, To: 11_001}}, 1: {{From: 12_000, To: 12_001}}},
			lost: 1, misfired: 1},
		{name: "a passed-over span wins over an outage", outages: []Interval{{From: 10_500, To: 12_500}}, passed: map[int64][]Interval{2: {{From: 11_000, To: 12_001}}},
			misfired: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := exp
			e.Outages, e.Passed = tc.outages, tc.passed
			got := Analyze(e, logs, receipts)
			if got.Expected != 6 || got.Fired != 4 || got.Lost != tc.lost || got.Skipped != tc.skipped || got.Misfired != tc.misfired {
				t.Errorf("expected/fired/lost/skipped/misfired = %d/%d/%d/%d/%d, want 6/4/%d/%d/%d",
					got.Expected, got.Fired, got.Lost, got.Skipped, got.Misfired, tc.lost, tc.skipped, tc.misfired)
			}
			if got.Duplicates != 2 || got.DuplicateLogs != 1 {
				t.Errorf("duplicates %d (logs %d), want 2 (1)", got.Duplicates, got.DuplicateLogs)
			}
			if got.Misfires != 1 || got.TriggerFailures != 1 || got.Unmatched != 1 {
				t.Errorf("misfires/failures/unmatched = %d/%d/%d, want 1/1/1", got.Misfires, got.TriggerFailures, got.Unmatched)
			}
			// First receipts: 5, 10, 20, 1 ms late.
			if got.LatenessP50 != 5 || got.LatenessMax != 20 || got.LatenessP99 != 20 {
				t.Errorf("lateness p50/p99/max = %v/%v/%v, want 5/20/20", got.LatenessP50, got.LatenessP99, got.LatenessMax)
			}
			if got.Rate != 1.3 {
				t.Errorf("rate %v, want 1.3", got.Rate)
			}
		})
	}
}

func TestExpectationFires(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		exp  Expectation
		want int
	}{
		{"aligned", Expectation{Window: Interval{From: 0, To: 3000}, Period: 1000}, 3},
		{"unaligned start rounds up", Expectation{Window: Interval{From: 1, To: 3000}, Period: 1000}, 2},
		{"one second", Expectation{Window: Interval{From: 5000, To: 6000}, Period: 1000}, 1},
		{"no period", Expectation{Window: Interval{From: 0, To: 3000}}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := len(tc.exp.Fires()); got != tc.want {
				t.Errorf("fires %d, want %d", got, tc.want)
			}
		})
	}
}

func TestSummarise(t *testing.T) {
	t.Parallel()
	got := Summarise([]float64{4, 1, 3, 2})
	want := Durations{N: 4, Mean: 2.5, P50: 2, P99: 4, Max: 4}
	if got != want {
		t.Errorf("Summarise = %+v, want %+v", got, want)
	}
	if (Summarise(nil) != Durations{}) {
		t.Error("Summarise(nil) not zero")
	}
}

// The spread workload: each job has its own fire time; only those count.
func TestAnalyzeEachJobOwnTime(t *testing.T) {
	t.Parallel()
	exp := Expectation{Jobs: []int64{1, 2, 3}, Window: Interval{From: 10_000, To: 40_000},
		Each: map[int64][]int64{1: {10_000}, 2: {25_000}, 3: {39_000}}}
	logs := []LogRow{{ID: 1, JobID: 1, Scheduled: 10_000}, {ID: 2, JobID: 2, Scheduled: 25_000}}
	receipts := []Receipt{{JobID: 1, LogID: 1, At: 10_004_000}, {JobID: 2, LogID: 2, At: 25_012_000}}
	got := Analyze(exp, logs, receipts)
	if got.Expected != 3 || got.Fired != 2 || got.Lost != 1 || got.LostAt[39] != 1 {
		t.Errorf("expected/fired/lost = %d/%d/%d (lostAt %v), want 3/2/1 (39 s)", got.Expected, got.Fired, got.Lost, got.LostAt)
	}
	if got.LatenessP50 != 4 || got.LatenessMax != 12 {
		t.Errorf("lateness p50/max = %v/%v, want 4/12", got.LatenessP50, got.LatenessMax)
	}
}

// ReadPassed turns the scan's debug lines into half-open spans per job and
// ignores every other line.
func TestReadPassed(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "xjob.log")
	log := `{"time":"2026-11-23T19:00:00Z","level":"DEBUG","msg":"scan: fires passed over","job":7,"misfired":true,"from":10000,"to":16000}
{"time":"2026-11-23T19:00:00Z","level":"WARN","msg":"scan: behind schedule, late fire times passed over","misfiredDoNothing":7}
not json
{"time":"2026-11-23T19:00:01Z","level":"DEBUG","msg":"scan: fires passed over","job":7,"misfired":false,"from":20000,"to":21000}
{"time":"2026-11-23T19:00:01Z","level":"DEBUG","msg":"scan: fires passed over","job":9,"misfired":true,"from":30000,"to":30000}
`
	if err := os.WriteFile(path, []byte(log), 0o600); err != nil {
		t.Fatal(err)
	}
	got := map[int64][]Interval{}
	if err := ReadPassed(path, got); err != nil {
		t.Fatal(err)
	}
	want := map[int64][]Interval{7: {{10000, 16001}, {20000, 21001}}, 9: {{30000, 30001}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ReadPassed = %v, want %v", got, want)
	}
}

// Jobs are posted without zero members, so an older API that does not know
// a newer field (a --baseline binary) still accepts them.
func TestCompatJSONDropsZeroMembers(t *testing.T) {
	t.Parallel()
	got, err := compatJSON(struct {
		Name    string   `json:"name"`
		Handler string   `json:"handler"`
		Retry   int      `json:"failRetryCount"`
		Status  int      `json:"triggerStatus"`
		On      bool     `json:"on"`
		List    []string `json:"addressList"`
		Ptr     *int     `json:"ptr"`
	}{Handler: "bench", Status: 1, List: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"handler":"bench","triggerStatus":1}`; string(got) != want {
		t.Errorf("compatJSON = %s, want %s", got, want)
	}
}

// A fire still queued in xjob when the run stopped is pending (late), not
// lost; queued ring buckets and dispatch tasks both count.
func TestPendingIsNotLost(t *testing.T) {
	t.Parallel()
	ring := pendingPairs([]byte(`{"shard":1,"second":11,"items":[{"j":2,"t":11000},{"j":1,"t":11000}]}`))
	task := pendingPairs([]byte(`{"occurrence":{"jobId":2,"type":"CRON","fireTime":12000},"revision":1}`))
	if want := [][2]int64{{2, 11000}, {1, 11000}}; !reflect.DeepEqual(ring, want) {
		t.Errorf("ring pairs = %v, want %v", ring, want)
	}
	if want := [][2]int64{{2, 12000}}; !reflect.DeepEqual(task, want) {
		t.Errorf("task pairs = %v, want %v", task, want)
	}
	exp := Expectation{Jobs: []int64{1, 2}, Window: Interval{From: 10_000, To: 13_000}, Period: 1000,
		Pending: map[[2]int64]bool{{2, 11000}: true, {2, 12000}: true}}
	logs := []LogRow{{ID: 1, JobID: 1, Scheduled: 10_000}, {ID: 2, JobID: 1, Scheduled: 11_000},
		{ID: 3, JobID: 1, Scheduled: 12_000}, {ID: 4, JobID: 2, Scheduled: 10_000}}
	var receipts []Receipt
	for _, l := range logs {
		receipts = append(receipts, Receipt{JobID: l.JobID, LogID: l.ID, At: l.Scheduled * 1000})
	}
	got := Analyze(exp, logs, receipts)
	if got.Fired != 4 || got.Pending != 2 || got.Lost != 0 {
		t.Errorf("fired/pending/lost = %d/%d/%d, want 4/2/0", got.Fired, got.Pending, got.Lost)
	}
}

// A backlog drained after the window is not a sustained rate: with a grace,
// fires first received after the window's end + grace are FiredLate, not
// Fired, and the rate counts only the ones in time.
func TestAnalyzeGraceSeparatesLateFires(t *testing.T) {
	t.Parallel()
	ms := func(v int64) int64 { return v * 1000 }
	exp := Expectation{Jobs: []int64{1}, Window: Interval{From: 10_000, To: 14_000}, Period: 1000}
	logs := []LogRow{
		{ID: 1, JobID: 1, Scheduled: 10_000}, {ID: 2, JobID: 1, Scheduled: 11_000},
		{ID: 3, JobID: 1, Scheduled: 12_000}, {ID: 4, JobID: 1, Scheduled: 13_000},
	}
	receipts := []Receipt{
		{JobID: 1, LogID: 99, At: ms(10_100)}, // an older fire, drained in the window
		{JobID: 1, LogID: 1, At: ms(10_500)},
		{JobID: 1, LogID: 2, At: ms(13_900)},
		{JobID: 1, LogID: 3, At: ms(15_000)}, // after the window, within the grace
		{JobID: 1, LogID: 4, At: ms(20_000)}, // drained 6 s after the window
	}
	tests := []struct {
		name               string
		grace              int64
		fired, late, inWin int
		rate, drain        float64
	}{
		{name: "no grace: every receipt counts (burst, spread)", fired: 4, inWin: 3, rate: 1, drain: 6},
		{name: "2 s grace: the drained one is late", grace: 2000, fired: 3, late: 1, inWin: 3, rate: 0.8, drain: 6},
		{name: "10 s grace: all in time", grace: 10_000, fired: 4, inWin: 3, rate: 1, drain: 6},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := exp
			e.Grace = tc.grace
			got := Analyze(e, logs, receipts)
			if got.Fired != tc.fired || got.FiredLate != tc.late || got.ReceivedInWindow != tc.inWin ||
				got.Rate != tc.rate || got.DrainSeconds != tc.drain || got.Lost != 0 {
				t.Errorf("fired/late/inWindow/rate/drain/lost = %d/%d/%d/%v/%v/%d, want %d/%d/%d/%v/%v/0",
					got.Fired, got.FiredLate, got.ReceivedInWindow, got.Rate, got.DrainSeconds, got.Lost,
					tc.fired, tc.late, tc.inWin, tc.rate, tc.drain)
			}
		})
	}
}

// A steady run whose fires xjob passed over says so in its notes; one that
// misfired nothing adds no note.
func TestMisfireNote(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		o    Outcome
		want string
	}{
		{name: "nothing misfired", o: Outcome{Expected: 100, Fired: 100}},
		{name: "misfired", o: Outcome{Expected: 100, Fired: 60, Misfired: 40}, want: "passed 40 of 100 expected fires over"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := misfireNote(tc.o)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("misfireNote = %q, want one containing %q", got, tc.want)
			}
		})
	}
}

// InTimePct counts the expected fires first received within a second of
// their fire time, over every expected fire (a late, a lost and a
// misfired fire all count against it).
func TestAnalyzeInTimePct(t *testing.T) {
	t.Parallel()
	exp := Expectation{Jobs: []int64{1}, Window: Interval{From: 10_000, To: 14_000}, Period: 1000}
	logs := []LogRow{
		{ID: 1, JobID: 1, Scheduled: 10_000, TriggerType: "CRON", TriggerCode: 200},
		{ID: 2, JobID: 1, Scheduled: 11_000, TriggerType: "CRON", TriggerCode: 200},
		{ID: 3, JobID: 1, Scheduled: 12_000, TriggerType: "CRON", TriggerCode: 200},
	}
	ms := func(v int64) int64 { return v * 1000 }
	receipts := []Receipt{
		{JobID: 1, LogID: 1, At: ms(10_999)}, // in time
		{JobID: 1, LogID: 2, At: ms(12_000)}, // exactly a second: in time
		{JobID: 1, LogID: 3, At: ms(13_001)}, // a millisecond over
	} // the fire at 13 s never came
	got := Analyze(exp, logs, receipts)
	if got.Expected != 4 || got.InTimePct != 50 {
		t.Fatalf("expected %d, in time %v %%, want 4 and 50 %%", got.Expected, got.InTimePct)
	}
}
