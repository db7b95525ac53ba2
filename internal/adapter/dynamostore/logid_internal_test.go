package dynamostore

import (
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
			page, k := logPlace(logIDHash, tt.occ, tt.job)
			if p2, k2 := logPlace(logIDHash, tt.occ, tt.job); p2 != page || k2 != k {
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
		page, k := logPlace(logIDHash, fire.Occurrence{JobID: job, Type: xjob.TriggerCron, FireTime: fireAt}.ID(0), job)
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
		page, k := logPlace(logIDHash, occ, job)
		id := logIDOf(page, k)
		if id < 0 || id >= 1<<53 || k < 0 || k > logKMask {
			t.Fatalf("%q job %d: id %d (page %d, k %d) outside [0, 2^53)", occ, job, id, page, k)
		}
		if pageOfLog(id) != page {
			t.Fatalf("%q: id %d names page %d, placed in %d", occ, id, pageOfLog(id), page)
		}
	})
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
