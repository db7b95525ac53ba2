package local

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/adapter/sqlitestore"
	"github.com/xjobdev/xjob/pkg/driver"
)

// buildXjob builds cmd/xjob into dir (with -race when the test has it, so
// the build reuses the test's cached packages).
func buildXjob(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "xjob")
	args := []string{"build", "-o", bin}
	if raceEnabled {
		args = append(args, "-race")
	}
	cmd := exec.Command("go", append(args, "../../../cmd/xjob")...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

// child is one `xjob local` process.
type child struct {
	cmd *exec.Cmd
	out *os.File
}

// crashAccessToken is the executor access token the child runs with.
const crashAccessToken = "crash-test-access-token"

func startChild(t *testing.T, bin, db, listen, token string, logf *os.File) *child {
	t.Helper()
	cmd := exec.Command(bin, "local", "--db", db, "--listen", listen, "--shards", "4", "--grace", "5s")
	cmd.Env = append(os.Environ(), "XJOB_ADMIN_TOKEN="+token, "XJOB_ACCESS_TOKEN="+crashAccessToken, "XJOB_DEMO=")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, out: logf}
	t.Cleanup(func() {
		if c.cmd.ProcessState == nil {
			_ = c.cmd.Process.Kill()
			_ = c.cmd.Wait()
		}
	})
	eventually(t, 30*time.Second, "xjob local /healthz", func() bool {
		resp, err := http.Get("http://" + listen + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return c
}

// TestCrashRestartNoLostNoDuplicate runs the real binary, SIGKILLs it while
// jobs fire, restarts it on the same file and checks with the executor's
// receipts that every scheduled second ran exactly once.
func TestCrashRestartNoLostNoDuplicate(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary (~30 s)")
	}
	if runtime.GOOS == "windows" {
		t.Skip("needs SIGKILL/SIGTERM semantics")
	}
	t.Parallel()
	dir := t.TempDir()
	bin := buildXjob(t, dir)
	db := filepath.Join(dir, "data", "xjob.db")
	listen := freePort(t)
	base := "http://" + listen
	const token = "crash-test-token"
	logf, err := os.Create(filepath.Join(dir, "xjob.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if t.Failed() {
			b, _ := os.ReadFile(logf.Name())
			t.Logf("xjob output:\n%s", tail(string(b), 60))
		}
	}()

	rec := newRecorder(t)
	rec.start(t, base, crashAccessToken, "") // manual group: no registration, results go to base

	proc := startChild(t, bin, db, listen, token, logf)
	var g xjob.Group
	if code := api(t, base, token, "POST", "/v1/groups", map[string]any{
		"appname": "crash-test", "title": "crash", "addressType": 1, "addressList": []string{rec.srv.URL + "/"},
	}, &g); code != http.StatusCreated {
		t.Fatalf("create group: %d", code)
	}
	const jobs = 3
	for i := range jobs {
		if code := api(t, base, token, "POST", "/v1/jobs", map[string]any{
			"jobGroup": g.ID, "jobDesc": fmt.Sprintf("every second %d", i), "author": "test",
			"scheduleType": "CRON", "scheduleConf": "* * * * * ?", "executorHandler": "rec", "triggerStatus": 1,
		}, nil); code != http.StatusCreated {
			t.Fatalf("create job: %d", code)
		}
	}
	// Jobs first fire after the 5 s pre-read window; let them run a while.
	eventually(t, 20*time.Second, "fires before the crash", func() bool { return len(rec.receipts()) >= jobs*4 })

	// SIGKILL at a quarter past a second: this second's dispatches are done,
	// the next seconds sit in the durable ring queue.
	now := time.Now()
	time.Sleep(now.Truncate(time.Second).Add(1250 * time.Millisecond).Sub(now))
	if err := proc.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = proc.cmd.Wait()
	killedAt := time.Now()
	before := len(rec.receipts())
	t.Logf("SIGKILL after %d receipts", before)

	// Restart at once (well within the 5 s misfire threshold).
	proc = startChild(t, bin, db, listen, token, logf)
	t.Logf("restarted in %s", time.Since(killedAt).Round(time.Millisecond))
	eventually(t, 20*time.Second, "fires after the restart", func() bool { return len(rec.receipts()) >= before+jobs*5 })

	// Graceful stop: SIGTERM, exit 0 within the grace period.
	stopAt := time.Now()
	if err := proc.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := proc.cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v", err)
	}
	t.Logf("SIGTERM → exit in %s", time.Since(stopAt).Round(time.Millisecond))

	// Map each receipt's log id to its job and scheduled time from the file.
	store, err := sqlitestore.Open(context.Background(), db, sqlitestore.Options{Shards: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	logs := map[int64]xjob.Log{}
	for cursor := ""; ; {
		page, err := store.LogList(context.Background(), driver.LogListParams{Cursor: cursor, Limit: 500})
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range page.Logs {
			logs[l.ID] = l
		}
		if cursor = page.Next; cursor == "" {
			break
		}
	}
	type fire struct{ job, at int64 }
	seenLog := map[int64]bool{}
	seenFire := map[fire]bool{}
	first, last := map[int64]int64{}, map[int64]int64{}
	var late []time.Duration
	for _, r := range rec.receipts() {
		if seenLog[r.LogID] {
			t.Errorf("log %d reached the executor twice", r.LogID)
		}
		seenLog[r.LogID] = true
		l, ok := logs[r.LogID]
		if !ok {
			t.Errorf("receipt for unknown log %d", r.LogID)
			continue
		}
		f := fire{l.JobID, l.ScheduledTime}
		if seenFire[f] {
			t.Errorf("job %d fire %s executed twice", f.job, time.UnixMilli(f.at).UTC().Format(time.RFC3339))
		}
		seenFire[f] = true
		if first[f.job] == 0 || f.at < first[f.job] {
			first[f.job] = f.at
		}
		last[f.job] = max(last[f.job], f.at)
		late = append(late, r.At.Sub(time.UnixMilli(l.ScheduledTime)))
	}
	if len(first) != jobs {
		t.Fatalf("receipts for %d jobs, want %d", len(first), jobs)
	}
	for job, from := range first {
		var missing []string
		for at := from; at <= last[job]; at += 1000 {
			if !seenFire[fire{job, at}] {
				missing = append(missing, time.UnixMilli(at).UTC().Format("15:04:05"))
			}
		}
		if len(missing) > 0 {
			t.Errorf("job %d: lost fires %v", job, missing)
		}
		t.Logf("job %d: %d consecutive seconds fired once each", job, (last[job]-from)/1000+1)
	}
	p50, p99 := percentiles(late)
	t.Logf("fire lateness (executor receive − scheduled) over %d fires, crash included: p50 %s, p99 %s", len(late), p50, p99)
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
