package dynamostore_test

import (
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/adapter/dynamostore"
	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/internal/testenv/emulator"
	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/driver"
	"github.com/xjobdev/xjob/pkg/driver/drivertest"
)

// The contract holds with one log page a second (and one scan shard, as
// a sparse deployment runs it): every log shares the time index's
// partition 0.
func TestStoreContractLogPages1(t *testing.T) {
	t.Parallel()
	drivertest.Exercise(t, func(t *testing.T) driver.Store {
		return setup(t, dynamostore.Options{Shards: 1, LogPages: 1, LogPartitions: 3, Clock: clock.NewFake(time.UnixMilli(1_700_000_000_000))})
	})
}

func TestNewLogPages(t *testing.T) {
	t.Parallel()
	tests := []struct {
		pages, want int // want 0: refused
	}{
		{0, 16}, {1, 1}, {2, 2}, {4, 4}, {8, 8}, {16, 16},
		{-1, 0}, {3, 0}, {6, 0}, {12, 0}, {32, 0},
	}
	for _, tt := range tests {
		t.Run(strconv.Itoa(tt.pages), func(t *testing.T) {
			t.Parallel()
			db, err := dynamostore.New(nil, dynamostore.Options{Tables: dynamostore.TablesWithPrefix("x"), LogPages: tt.pages})
			if tt.want == 0 {
				if err == nil {
					t.Fatalf("LogPages %d accepted", tt.pages)
				}
				return
			}
			if err != nil || db.LogPages() != tt.want {
				t.Fatalf("LogPages %d: %v, %v; want %d", tt.pages, db, err, tt.want)
			}
		})
	}
}

// pageItems returns the page items of db's logs table.
func pageItems(t *testing.T, db *dynamostore.DB) []map[string]types.AttributeValue {
	t.Helper()
	out, err := emulator.DynamoDB(t).Scan(t.Context(), &dynamodb.ScanInput{TableName: new(dynamostore.TablesOf(db).Logs)})
	if err != nil {
		t.Fatal(err)
	}
	var pages []map[string]types.AttributeValue
	for _, it := range out.Items {
		if pk, ok := it[dynamostore.AttrPK].(*types.AttributeValueMemberS); ok && pk.Value[0] == 'p' {
			pages = append(pages, it)
		}
	}
	return pages
}

// cronLog is job's log of the cron fire at sched (ms), triggered then
// and running.
func cronLog(job int64, sched int64) xjob.Log {
	occ := fire.Occurrence{JobID: job, Type: xjob.TriggerCron, FireTime: sched}
	return xjob.Log{OccurrenceID: occ.ID(0), JobID: job, GroupID: 1, TriggerType: xjob.TriggerCron,
		ScheduledTime: sched, TriggerTime: sched, TriggerCode: xjob.CodeSuccess}
}

// jobsOfParts returns the first job ids whose shards among 16 are a and b
// (a ≠ b).
func jobsOfParts(a, b int) (int64, int64) {
	var ja, jb int64
	for j := int64(1); ja == 0 || jb == 0; j++ {
		switch fire.ShardOf(j, 16) {
		case a:
			if ja == 0 {
				ja = j
			}
		case b:
			if jb == 0 {
				jb = j
			}
		}
	}
	return ja, jb
}

// Two jobs of different shards among 16 that fire in one second share one
// page at LogPages 1 (one write claims both) and have a page each at 16.
func TestLogPagesShareOnePage(t *testing.T) {
	t.Parallel()
	jobA, jobB := jobsOfParts(3, 10)
	tests := []struct {
		pages, wantItems int
	}{
		{1, 1},
		{2, 2}, // 3 & 1 = 1, 10 & 1 = 0
		{16, 2},
	}
	for _, tt := range tests {
		t.Run(strconv.Itoa(tt.pages), func(t *testing.T) {
			t.Parallel()
			db, ctx := setup(t, dynamostore.Options{LogPages: tt.pages}), t.Context()
			res, err := db.LogCreateMany(ctx, []xjob.Log{cronLog(jobA, testNow), cronLog(jobB, testNow)})
			if err != nil || res[0].Err != nil || res[1].Err != nil {
				t.Fatalf("create: %v %+v", err, res)
			}
			items := pageItems(t, db)
			if len(items) != tt.wantItems {
				t.Fatalf("%d page items, want %d", len(items), tt.wantItems)
			}
			for _, it := range items {
				part, err := strconv.Atoi(it[dynamostore.AttrTimePart].(*types.AttributeValueMemberN).Value)
				if err != nil || part >= tt.pages {
					t.Fatalf("page in index partition %v, want below %d", it[dynamostore.AttrTimePart], tt.pages)
				}
			}
			for i, job := range []int64{jobA, jobB} {
				l, err := db.LogGet(ctx, res[i].Log.ID)
				if err != nil || l.JobID != job {
					t.Fatalf("log %d: %+v, %v", res[i].Log.ID, l, err)
				}
			}
		})
	}
}

// LogList by job reads one partition of the time index (the job's shard
// among 16 masked to LogPages) and the all-jobs list all of 0..LogPages-1:
// both find every log, whether its job shares the partition with others
// or not, with scheduled and hash-placed (manual) logs mixed.
func TestLogListLogPages(t *testing.T) {
	t.Parallel()
	for _, pages := range []int{1, 4} {
		t.Run(strconv.Itoa(pages), func(t *testing.T) {
			t.Parallel()
			db, ctx := setup(t, dynamostore.Options{LogPages: pages}), t.Context()
			// Jobs of shards 1 and 5 among 16 share partition 1 at 4
			// pages; 2 is alone in its partition, 3 and 7 share another.
			var jobs []int64
			for _, sh := range [][2]int{{1, 5}, {2, 3}, {7, 0}} {
				a, b := jobsOfParts(sh[0], sh[1])
				jobs = append(jobs, a, b)
			}
			want := map[int64][]int64{} // job → log ids
			var all []int64
			for sec := range int64(3) {
				for i, job := range jobs {
					l := cronLog(job, testNow-sec*60_000)
					if i%2 == 1 && sec == 1 {
						l.OccurrenceID, l.TriggerType = fmt.Sprintf("j%d/MANUAL/r%d", job, i), xjob.TriggerManual
					}
					got, err := db.LogCreate(ctx, l)
					if err != nil {
						t.Fatal(err)
					}
					want[job] = append(want[job], got.ID)
					all = append(all, got.ID)
				}
			}
			ids := func(p driver.LogListParams) []int64 {
				t.Helper()
				var out []int64
				for {
					page, err := db.LogList(ctx, p)
					if err != nil {
						t.Fatal(err)
					}
					for _, l := range page.Logs {
						out = append(out, l.ID)
					}
					if page.Next == "" {
						slices.Sort(out)
						return out
					}
					p.Cursor = page.Next
				}
			}
			for job, w := range want {
				slices.Sort(w)
				if got := ids(driver.LogListParams{JobID: job, Limit: 2}); !slices.Equal(got, w) {
					t.Errorf("job %d (shard %d among 16): listed %v, want %v", job, fire.ShardOf(job, 16), got, w)
				}
				n, err := db.LogCount(ctx, driver.LogCountParams{JobID: job})
				if err != nil || n != len(w) {
					t.Errorf("job %d: counted %d, %v; want %d", job, n, err, len(w))
				}
			}
			slices.Sort(all)
			if got := ids(driver.LogListParams{Limit: 5}); !slices.Equal(got, all) {
				t.Errorf("all jobs: listed %v, want %v", got, all)
			}
			running, err := db.LogsRunning(ctx, testNow+1, 100)
			if err != nil || len(running) != len(all) {
				t.Errorf("LogsRunning: %d logs, %v; want %d", len(running), err, len(all))
			}
			for _, it := range pageItems(t, db) {
				part, _ := strconv.Atoi(it[dynamostore.AttrTimePart].(*types.AttributeValueMemberN).Value)
				if part >= pages {
					t.Fatalf("page %v in index partition %d, want below %d", it[dynamostore.AttrPK], part, pages)
				}
			}
		})
	}
}

// A log's page is read from its id, so a store opened with another
// LogPages still gets it by id (its lists would miss it: hence the
// layout check that refuses a change).
func TestLogGetAcrossLogPages(t *testing.T) {
	t.Parallel()
	job, _ := jobsOfParts(13, 0)
	wide := setup(t, dynamostore.Options{})
	l, err := wide.LogCreate(t.Context(), cronLog(job, testNow))
	if err != nil {
		t.Fatal(err)
	}
	narrow := reopen(t, wide, dynamostore.Options{LogPages: 1, Clock: clock.NewFake(time.UnixMilli(testNow))})
	got, err := narrow.LogGet(t.Context(), l.ID)
	if err != nil || got.OccurrenceID != l.OccurrenceID {
		t.Fatalf("LogGet at LogPages 1 of a log written at 16: %+v, %v", got, err)
	}
}
