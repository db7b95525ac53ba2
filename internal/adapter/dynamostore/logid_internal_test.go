package dynamostore

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/fire"
)

func TestLogIDLayout(t *testing.T) {
	t.Parallel()
	const fireAt = 1_795_000_000_123 // 2026-11, in ms
	tests := []struct {
		name, occ string
		job       int64
		second    int64 // the page's second, -1: from the hash
	}{
		{"scheduled", fire.Occurrence{JobID: 7, Type: xjob.TriggerCron, FireTime: fireAt}.ID(0), 7, fireAt/1000 - logIDEpoch},
		{"misfire names the same fire", fire.Occurrence{JobID: 7, Type: xjob.TriggerMisfire, FireTime: fireAt}.ID(0), 7, fireAt/1000 - logIDEpoch},
		{"broadcast shard", fire.Occurrence{JobID: 23, Type: xjob.TriggerCron, FireTime: fireAt}.ID(5), 23, fireAt/1000 - logIDEpoch},
		{"manual", fire.Occurrence{JobID: 7, Type: xjob.TriggerManual, Ref: "abc"}.ID(0), 7, -1},
		{"before the epoch", "j7/t5/s0", 7, -1},
		{"not a number", "j7/tx/s0", 7, -1},
		{"free form", "occ-1", 1, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			page, k := logPlace(logIDHash, logParts, tt.occ, tt.job)
			if p2, k2 := logPlace(logIDHash, logParts, tt.occ, tt.job); p2 != page || k2 != k {
				t.Fatalf("placed at %d/%d then %d/%d", page, k, p2, k2)
			}
			if got := page & (logParts - 1); got != int64(fire.ShardOf(tt.job, logParts)) {
				t.Fatalf("page part %d, want the job's shard among 16, %d", got, fire.ShardOf(tt.job, logParts))
			}
			if tt.second >= 0 && page>>logPartBits != tt.second {
				t.Fatalf("page second %d, want %d", page>>logPartBits, tt.second)
			}
			if tt.second < 0 && page>>logPartBits&logHashedSecond == 0 {
				t.Fatalf("hash-placed page second %d lacks the hashed mark: it could share a scheduled second's page", page>>logPartBits)
			}
			for _, kk := range []int64{k, (k + 1) & logKMask, logKMask} {
				id := logIDOf(page, kk)
				if id <= 0 && !(page == 0 && kk == 0) || id >= 1<<53 {
					t.Fatalf("k %d: id %d outside (0, 2^53)", kk, id)
				}
				if pageOfLog(id) != page {
					t.Fatalf("id %d names page %d, want %d", id, pageOfLog(id), page)
				}
			}
		})
	}
	// Jobs of one page get distinct preferred ids; with 4 shards, the
	// pages of one shard's bucket are that shard's alone.
	seen := map[int64]int64{}
	for job := int64(0); job < 4096; job++ {
		page, k := logPlace(logIDHash, logParts, fire.Occurrence{JobID: job, Type: xjob.TriggerCron, FireTime: fireAt}.ID(0), job)
		if other, ok := seen[logIDOf(page, k)]; ok {
			t.Fatalf("jobs %d and %d prefer one id", other, job)
		}
		if int(page&(logParts-1))%4 != fire.ShardOf(job, 4) {
			t.Fatalf("job %d of shard %d (of 4) lands in part %d", job, fire.ShardOf(job, 4), page&(logParts-1))
		}
		seen[logIDOf(page, k)] = job
	}
}

func FuzzOccurrenceFireTime(f *testing.F) {
	for _, s := range []string{"j1/t1795000000123/s0", "j1/MANUAL/rx/s0", "", "/t/", "j/t-5/s", "j1/t99999999999999999/s-1"} {
		f.Add(s, int64(1))
	}
	f.Fuzz(func(t *testing.T, occ string, job int64) {
		for _, pages := range []int{1, 2, 4, 8, 16} {
			page, k := logPlace(logIDHash, pages, occ, job)
			id := logIDOf(page, k)
			if id < 0 || id >= 1<<53 || k < 0 || k > logKMask {
				t.Fatalf("%q job %d pages %d: id %d (page %d, k %d) outside [0, 2^53)", occ, job, pages, id, page, k)
			}
			if pageOfLog(id) != page || page&(logParts-1) >= int64(pages) {
				t.Fatalf("%q pages %d: id %d names page %d, placed in %d", occ, pages, id, pageOfLog(id), page)
			}
		}
	})
}

// TestLogPlaceLogPages checks the page part under each LogPages: the
// job's shard among 16 masked to LogPages, the same second and k as at
// 16 (the id format does not change), and with a scan shard count that
// divides LogPages a ring bucket's pages are that shard's alone.
func TestLogPlaceLogPages(t *testing.T) {
	t.Parallel()
	const fireAt = 1_795_000_000_123
	tests := []struct {
		pages, shards int
		wantParts     int // distinct parts over many jobs
	}{
		{pages: 1, shards: 1, wantParts: 1},
		{pages: 4, shards: 1, wantParts: 4},
		{pages: 4, shards: 4, wantParts: 4},
		{pages: 16, shards: 4, wantParts: 16},
		{pages: 16, shards: 16, wantParts: 16},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("pages%d-shards%d", tt.pages, tt.shards), func(t *testing.T) {
			t.Parallel()
			parts := map[int64]bool{}
			owner := map[int64]int{} // part → the scan shard whose bucket writes it
			for job := int64(1); job <= 512; job++ {
				for _, occ := range []string{
					fire.Occurrence{JobID: job, Type: xjob.TriggerCron, FireTime: fireAt}.ID(0),
					fire.Occurrence{JobID: job, Type: xjob.TriggerManual, Ref: "r"}.ID(0),
				} {
					page, k := logPlace(logIDHash, tt.pages, occ, job)
					full, fullK := logPlace(logIDHash, logParts, occ, job)
					part := page & (logParts - 1)
					if want := int64(fire.ShardOf(job, 16) & (tt.pages - 1)); part != want || part != logPartOf(job, tt.pages) {
						t.Fatalf("job %d %q: part %d, want ShardOf(job, 16) & %d = %d", job, occ, part, tt.pages-1, want)
					}
					if page>>logPartBits != full>>logPartBits || k != fullK {
						t.Fatalf("job %d %q: second/k %d/%d, at 16 pages %d/%d", job, occ, page>>logPartBits, k, full>>logPartBits, fullK)
					}
					if id := logIDOf(page, k); pageOfLog(id) != page {
						t.Fatalf("id %d names page %d, want %d", id, pageOfLog(id), page)
					}
					parts[part] = true
				}
				part, shard := logPartOf(job, tt.pages), fire.ShardOf(job, tt.shards)
				if o, ok := owner[part]; ok && o != shard {
					t.Fatalf("part %d written by the buckets of shards %d and %d", part, o, shard)
				}
				owner[part] = shard
			}
			if len(parts) != tt.wantParts {
				t.Fatalf("%d distinct parts over 512 jobs, want %d", len(parts), tt.wantParts)
			}
		})
	}
}

func TestPageCodecFitsLongMessages(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	long := make([]byte, 200<<10)
	for i := range long {
		long[i] = byte('a' + rng.IntN(26)) // poorly compressible
	}
	var logs []xjob.Log
	for i := range 64 {
		logs = append(logs, xjob.Log{ID: int64(i + 1), OccurrenceID: "occ", JobID: 1, HandleMsg: string(long), TriggerMsg: "ok",
			Version: 3, ClaimUntil: 99})
	}
	body, err := fitPage(logs)
	if err != nil {
		t.Fatal(err)
	}
	if len(body) > maxPageBody {
		t.Fatalf("body %d bytes, over %d", len(body), maxPageBody)
	}
	back, err := decodeLogs(body)
	if err != nil {
		t.Fatal(err)
	}
	if len(back) != 64 || back[0].Version != 3 || back[0].ClaimUntil != 99 || len(back[0].HandleMsg) >= len(long) || back[0].TriggerMsg != "ok" {
		t.Fatalf("decoded %d logs, first %+v", len(back), back[0].Version)
	}
}

// TestPageCodecFitsLongParams: 300 logs with 2,048-character random
// params compress to about 350 KB, over the page limit; the page is still
// written (the params cut), so its fires are not lost.
func TestPageCodecFitsLongParams(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	param := func() string {
		b := make([]byte, 2048)
		for i := range b {
			b[i] = byte('!' + rng.IntN(90))
		}
		return string(b)
	}
	var logs []xjob.Log
	for i := range 600 {
		logs = append(logs, xjob.Log{ID: int64(i + 1), OccurrenceID: "occ", JobID: int64(i), ExecutorParam: param(),
			ExecutorShardingParam: "1/2", Version: 1})
	}
	body, err := fitPage(logs)
	if err != nil {
		t.Fatal(err)
	}
	if len(body) > maxPageBody {
		t.Fatalf("body %d bytes, over %d", len(body), maxPageBody)
	}
	back, err := decodeLogs(body)
	if err != nil {
		t.Fatal(err)
	}
	if len(back) != 600 || back[0].ExecutorShardingParam != "1/2" || back[0].ExecutorParam == "" {
		t.Fatalf("decoded %d logs, first param %d bytes, sharding %q", len(back), len(back[0].ExecutorParam), back[0].ExecutorShardingParam)
	}
}
