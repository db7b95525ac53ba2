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
	// How long one whole apply takes here, to kill the next ones at
	// points across it (the write transaction comes last).
	full := func() time.Duration {
		listen := freePort(t)
		logf, err := os.Create(filepath.Join(dir, "xjob-full.log"))
		if err != nil {
			t.Fatal(err)
		}
		proc := startChild(t, bin, filepath.Join(dir, "full", "xjob.db"), listen, token, logf)
		defer func() { _ = proc.cmd.Process.Signal(syscall.SIGKILL); _ = proc.cmd.Wait() }()
		start := time.Now()
		if code := api(t, "http://"+listen, token, "POST", "/v1/apply", m, nil); code != http.StatusOK {
			t.Fatalf("whole apply: %d", code)
		}
		return time.Since(start)
	}()
	t.Logf("a whole apply of %d jobs takes %s", jobs, full.Round(time.Millisecond))
	outcomes := map[string]int{}
	// Kill points: at a share of a whole apply's time (planning, or the
	// write), and once the write transaction has spilled so many bytes
	// of pages into the WAL (inside the transaction, before its commit).
	type killAt struct {
		after    time.Duration
		walBytes int64
	}
	for attempt, k := range []killAt{{after: full / 2}, {walBytes: 512 << 10}, {walBytes: 2 << 20}, {after: full * 3 / 2}} {
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
		if k.after > 0 {
			time.Sleep(k.after)
		} else {
			base := walSize(db)
			deadline := time.Now().Add(4 * full)
			for walSize(db)-base < k.walBytes && time.Now().Before(deadline) && len(done) == 0 {
				time.Sleep(time.Millisecond)
			}
		}
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
		t.Logf("kill %+v: reply %d, restart shows %d jobs", k, status, n)
	}
	t.Logf("outcomes: %v", outcomes)
}

func walSize(db string) int64 {
	st, err := os.Stat(db + "-wal")
	if err != nil {
		return 0
	}
	return st.Size()
}
