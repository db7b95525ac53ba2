package local

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
)

// TestApplyKilledMidway SIGKILLs `xjob local` while it writes a large
// apply, restarts it on the same file and checks that it holds the old set
// or the new one, whole: never a part of the jobs, never a job without its
// children.
func TestApplyKilledMidway(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	if runtime.GOOS == "windows" {
		t.Skip("needs SIGKILL")
	}
	t.Parallel()
	dir := t.TempDir()
	bin := buildXjob(t, dir)
	const token, jobs = "apply-crash-token", 3000
	m := xjob.Manifest{Groups: []xjob.GroupSpec{{AppName: "crash-apply", Title: "crash", AddressType: xjob.AddressAuto}}}
	param := strings.Repeat("p", 1000)
	for i := range jobs {
		js := xjob.JobSpec{Name: fmt.Sprintf("job-%04d", i), Group: "crash-apply", Description: "d", Author: "a",
			ScheduleType: xjob.ScheduleCron, ScheduleConf: "0 0 3 * * ?", Handler: "h", Param: param}
		if i > 0 {
			js.Children = []string{fmt.Sprintf("job-%04d", i-1)}
		}
		m.Jobs = append(m.Jobs, js)
	}
	body, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	// How long one whole apply takes here and how many bytes its write
	// transaction puts in the WAL, to kill the next ones at points across
	// it (the write transaction comes last).
	full, wal := func() (time.Duration, int64) {
		listen := freePort(t)
		logf, err := os.Create(filepath.Join(dir, "xjob-full.log"))
		if err != nil {
			t.Fatal(err)
		}
		db := filepath.Join(dir, "full", "xjob.db")
		proc := startChild(t, bin, db, listen, token, logf)
		defer func() { _ = proc.cmd.Process.Signal(syscall.SIGKILL); _ = proc.cmd.Wait() }()
		walBase := walSize(db)
		start := time.Now()
		if code := api(t, "http://"+listen, token, "POST", "/v1/apply", m, nil); code != http.StatusOK {
			t.Fatalf("whole apply: %d", code)
		}
		return time.Since(start), walSize(db) - walBase
	}()
	t.Logf("a whole apply of %d jobs takes %s and writes %d bytes to the WAL", jobs, full.Round(time.Millisecond), wal)
	if wal < 1<<20 {
		t.Fatalf("a whole apply wrote %d bytes to the WAL: too few to kill it midway", wal)
	}
	outcomes := map[string]int{}
	// Kill points: at a share of a whole apply's time (planning, or the
	// write), and once the write transaction has spilled a share of a
	// whole apply's WAL bytes (inside the transaction, before its commit:
	// its pages reach the WAL as they are written, the commit comes last).
	type killAt struct {
		after    time.Duration
		walBytes int64
	}
	attempt := 0
	try := func(k killAt) {
		db := filepath.Join(dir, fmt.Sprintf("a%d", attempt), "xjob.db")
		listen := freePort(t)
		base := "http://" + listen
		logf, err := os.Create(filepath.Join(dir, fmt.Sprintf("xjob-%d.log", attempt)))
		if err != nil {
			t.Fatal(err)
		}
		proc := startChild(t, bin, db, listen, token, logf)
		done := make(chan int, 1)
		go func() {
			req, _ := http.NewRequest("POST", base+"/v1/apply", bytes.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+token)
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				done <- 0 // killed before it answered
				return
			}
			resp.Body.Close()
			done <- resp.StatusCode
		}()
		walBase := walSize(db)
		if k.after > 0 {
			time.Sleep(k.after)
		} else {
			deadline := time.Now().Add(4 * full)
			for walSize(db)-walBase < k.walBytes && time.Now().Before(deadline) && len(done) == 0 {
				time.Sleep(time.Millisecond)
			}
		}
		spilled := walSize(db) - walBase
		if err := proc.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = proc.cmd.Wait()
		status := <-done

		proc = startChild(t, bin, db, listen, token, logf)
		var exported xjob.Manifest
		if code := api(t, base, token, "GET", "/v1/export", nil, &exported); code != http.StatusOK {
			t.Fatalf("export after restart: %d", code)
		}
		_ = proc.cmd.Process.Signal(syscall.SIGKILL)
		_ = proc.cmd.Wait()
		n := len(exported.Jobs)
		switch n {
		case 0:
			outcomes["old set"]++
			// The transaction had written pages to the WAL and had not
			// committed: the kill landed inside it, and it rolled back.
			if k.walBytes > 0 && spilled >= k.walBytes && status == 0 {
				outcomes["killed inside the write"]++
			}
		case jobs:
			outcomes["new set"]++
			for _, j := range exported.Jobs {
				if j.Name != "job-0000" && len(j.Children) != 1 {
					t.Fatalf("attempt %d: job %s has children %v", attempt, j.Name, j.Children)
				}
			}
		default:
			t.Fatalf("attempt %d (kill %+v, reply %d): %d of %d jobs after the restart", attempt, k, status, n, jobs)
		}
		if status == http.StatusOK && n != jobs {
			t.Fatalf("attempt %d: the apply answered 200 but the restart shows %d jobs", attempt, n)
		}
		t.Logf("kill %+v (WAL +%d bytes): reply %d, restart shows %d jobs", k, spilled, status, n)
		attempt++
	}
	for _, k := range []killAt{{after: full / 2}, {walBytes: wal / 8}, {walBytes: wal * 3 / 8}, {walBytes: wal * 5 / 8},
		{walBytes: wal * 7 / 8}, {after: full * 3 / 2}} {
		try(k)
	}
	// The test is about a kill inside the write transaction: a run whose
	// kills all missed it (a loaded machine, a write that never spilled)
	// tries again, and fails rather than pass having proved nothing.
	for retry := 0; outcomes["killed inside the write"] == 0 && retry < 4; retry++ {
		try(killAt{walBytes: wal / 2})
	}
	t.Logf("outcomes: %v", outcomes)
	if outcomes["killed inside the write"] == 0 {
		t.Fatalf("no kill landed inside the apply's write transaction (outcomes %v): nothing was tested", outcomes)
	}
}

func walSize(db string) int64 {
	st, err := os.Stat(db + "-wal")
	if err != nil {
		return 0
	}
	return st.Size()
}
