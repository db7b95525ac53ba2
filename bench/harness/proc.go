package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Build compiles pkg (e.g. "./cmd/xjob") from the module at root into
// dir/name and returns the binary's path. The harness measures the binary a
// user runs, so it builds without -race.
func Build(ctx context.Context, root, pkg, dir, name string) (string, error) {
	bin := filepath.Join(dir, name)
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, pkg)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %w\n%s", pkg, err, out)
	}
	return bin, nil
}

// DefaultBaseline picks the revision `make bench` compares the tree at
// root with when no --baseline-rev or --baseline-bin is given, so that every
// figure it prints comes with a baseline measured in the same run (figures
// of two runs on a shared machine are not comparable): the merge base of
// HEAD with the newest release tag (v*), or, before the first release,
// with the branch main. why says which it took.
func DefaultBaseline(ctx context.Context, root string) (rev, why string, err error) {
	git := func(args ...string) (string, error) {
		out, err := exec.CommandContext(ctx, "git", append([]string{"-C", root}, args...)...).Output()
		return strings.TrimSpace(string(out)), err
	}
	from, what := "main", "the branch main (no release tag yet)"
	if tag, err := git("describe", "--tags", "--abbrev=0", "--match", "v*", "HEAD"); err == nil && tag != "" {
		from, what = tag, "the last release "+tag
	}
	base, err := git("merge-base", "HEAD", from)
	if err != nil || base == "" {
		return "", "", fmt.Errorf("default baseline: no merge base of HEAD with %s (give --baseline-rev): %w", from, err)
	}
	short, err := git("rev-parse", "--short", base)
	if err != nil {
		return "", "", fmt.Errorf("default baseline: %w", err)
	}
	return short, "the merge base with " + what, nil
}

// BuildRev builds cmd/xjob as it was at git revision rev of the repository
// at root: `git archive rev` is unpacked into dir/src-<rev> and built there
// into dir/xjob-<rev>. It returns the binary and the revision's short hash.
func BuildRev(ctx context.Context, root, rev, dir string) (bin, short string, err error) {
	out, err := exec.CommandContext(ctx, "git", "-C", root, "rev-parse", "--short", "--verify", rev+"^{commit}").Output()
	if err != nil {
		return "", "", fmt.Errorf("baseline revision %q: %w", rev, err)
	}
	short = strings.TrimSpace(string(out))
	src := filepath.Join(dir, "src-"+short)
	if err := os.MkdirAll(src, 0o755); err != nil {
		return "", "", err
	}
	archive := exec.CommandContext(ctx, "git", "-C", root, "archive", "--format=tar", short)
	untar := exec.CommandContext(ctx, "tar", "-x", "-C", src)
	pipe, err := archive.StdoutPipe()
	if err != nil {
		return "", "", err
	}
	untar.Stdin = pipe
	var stderr strings.Builder
	archive.Stderr, untar.Stderr = &stderr, &stderr
	if err := untar.Start(); err != nil {
		return "", "", fmt.Errorf("tar: %w", err)
	}
	if err := archive.Run(); err != nil {
		_ = untar.Wait()
		return "", "", fmt.Errorf("git archive %s: %w: %s", short, err, stderr.String())
	}
	if err := untar.Wait(); err != nil {
		return "", "", fmt.Errorf("tar: %w: %s", err, stderr.String())
	}
	bin, err = Build(ctx, src, "./cmd/xjob", dir, "xjob-"+short)
	return bin, short, err
}

// Describe names the tree at root: its short HEAD hash, "+dirty" when it
// has uncommitted changes ("" when git cannot tell).
func Describe(ctx context.Context, root string) string {
	out, err := exec.CommandContext(ctx, "git", "-C", root, "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return ""
	}
	d := strings.TrimSpace(string(out))
	if st, err := exec.CommandContext(ctx, "git", "-C", root, "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(st) > 0 {
		d += "+dirty"
	}
	return d
}

// FreeAddr returns a loopback address with a port that was free a moment ago.
func FreeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("free port: %w", err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr, nil
}

// XjobSpec is how to start one `xjob local` child, or one `xjob server`
// node when NodeID is set.
type XjobSpec struct {
	Bin string
	// DB is the SQLite file (local) or the database URL (server).
	DB     string
	Listen string // host:port on loopback
	// NodeID, when set, starts `xjob server --node-id NodeID` on the
	// database URL DB instead of `xjob local`; Start then waits for
	// /readyz (the node has joined the cluster), not /healthz.
	NodeID string
	// LeaseTTL is a node's --lease-ttl (0: the default, 5 s).
	LeaseTTL time.Duration
	Token    string // admin token
	Shards   int
	// LogPath receives the child's stdout and stderr (JSON process log,
	// debug level: the harness reads scan tick times from it).
	LogPath string
	// Env is added to the child's environment.
	Env []string
	// Pprof, when set, is the loopback host:port of the child's
	// --pprof-listen (net/http/pprof), for CPU profiles of a live run.
	Pprof string
}

// Usage is what the kernel accounted to the xjob processes the harness ran:
// CPU seconds summed over every process, peak RSS the largest of them.
type Usage struct {
	CPUSeconds float64 `json:"cpuSeconds"`
	PeakRSSMB  float64 `json:"peakRssMB"`
	Processes  int     `json:"processes"`
}

// Xjob supervises `xjob local` children of one spec: it starts them, kills or
// stops them, and accumulates their rusage.
type Xjob struct {
	spec XjobSpec

	mu    sync.Mutex
	cmd   *exec.Cmd
	done  chan struct{}
	usage Usage
	// hwmMB is the running child's own peak resident set (VmHWM), read
	// just before it is signalled, when hwmRead.
	hwmMB   float64
	hwmRead bool
}

// NewXjob prepares a supervisor; nothing runs until Start.
func NewXjob(spec XjobSpec) *Xjob { return &Xjob{spec: spec} }

// URL is the child's base address.
func (x *Xjob) URL() string { return "http://" + x.spec.Listen }

// Start launches the child and waits until /healthz answers (a server
// node: /readyz, once it has joined its cluster), at most timeout. It
// returns when the API is reachable; the scanner ticks from the next whole
// second on.
func (x *Xjob) Start(ctx context.Context, timeout time.Duration) error {
	logf, err := os.OpenFile(x.spec.LogPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("xjob log: %w", err)
	}
	shards := x.spec.Shards
	if shards == 0 {
		shards = 16
	}
	args := []string{"local", "--db", x.spec.DB, "--listen", x.spec.Listen,
		"--shards", fmt.Sprint(shards), "--log-level", "debug", "--grace", "5s"}
	probe := "/healthz"
	if x.spec.NodeID != "" {
		// The bench executor listens on loopback, which a server refuses
		// to call unless allowed.
		args = []string{"server", "--listen", x.spec.Listen, "--node-id", x.spec.NodeID,
			"--shards", fmt.Sprint(shards), "--log-level", "debug", "--grace", "5s", "--allow-cidrs", "127.0.0.0/8"}
		if x.spec.LeaseTTL > 0 {
			args = append(args, "--lease-ttl", x.spec.LeaseTTL.String())
		}
		probe = "/readyz"
	}
	if x.spec.Pprof != "" {
		args = append(args, "--pprof-listen", x.spec.Pprof)
	}
	cmd := exec.Command(x.spec.Bin, args...)
	cmd.Env = append(os.Environ(), "XJOB_ADMIN_TOKEN="+x.spec.Token, "XJOB_ACCESS_TOKEN="+LocalAccessToken, "XJOB_DEMO=")
	if x.spec.NodeID != "" {
		// The URL holds the password: a variable, not an argument ps shows.
		cmd.Env = append(cmd.Env, "XJOB_DB="+x.spec.DB)
	}
	cmd.Env = append(cmd.Env, x.spec.Env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		return fmt.Errorf("start xjob: %w", err)
	}
	done := make(chan struct{})
	x.mu.Lock()
	x.cmd, x.done = cmd, done
	x.mu.Unlock()
	go func() {
		_ = cmd.Wait()
		_ = logf.Close()
		x.account(cmd.ProcessState)
		close(done)
	}()
	deadline := time.Now().Add(timeout)
	client := &http.Client{Timeout: time.Second}
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, x.URL()+probe, nil)
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-done:
			return fmt.Errorf("xjob exited during start-up (see %s)", x.spec.LogPath)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("xjob did not answer %s in time (see %s)", probe, x.spec.LogPath)
		}
	}
}

func (x *Xjob) account(ps *os.ProcessState) {
	if ps == nil {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	x.usage.Processes++
	x.usage.CPUSeconds += (ps.UserTime() + ps.SystemTime()).Seconds()
	// The peak is the child's VmHWM when it was read. The rusage's
	// ru_maxrss is not the child's own: Linux keeps, at exec, the high
	// water of the memory the child left, and os/exec starts a child on
	// its parent's memory (vfork), so ru_maxrss is at least this
	// harness's resident size when it started xjob — after a baseline's
	// run, often more than xjob ever used.
	if x.hwmRead {
		x.usage.PeakRSSMB = max(x.usage.PeakRSSMB, x.hwmMB)
	} else if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		x.usage.PeakRSSMB = max(x.usage.PeakRSSMB, float64(ru.Maxrss)/1024) // Linux: KiB
	}
	x.hwmMB, x.hwmRead = 0, false
}

// signal sends sig to the running child and waits for it to exit (at most
// wait, then SIGKILL).
func (x *Xjob) signal(sig os.Signal, wait time.Duration) {
	x.mu.Lock()
	cmd, done := x.cmd, x.done
	x.mu.Unlock()
	if cmd == nil {
		return
	}
	if mb, ok := statusMB(cmd.Process.Pid, "VmHWM:"); ok {
		x.mu.Lock()
		x.hwmMB, x.hwmRead = mb, true
		x.mu.Unlock()
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-done:
	case <-time.After(wait):
		_ = cmd.Process.Kill()
		<-done
	}
}

// Kill SIGKILLs the child and waits until the kernel has reaped it.
func (x *Xjob) Kill() { x.signal(syscall.SIGKILL, 10*time.Second) }

// Stop asks the child to shut down cleanly (SIGTERM) and waits for it.
func (x *Xjob) Stop() { x.signal(syscall.SIGTERM, 20*time.Second) }

// CPU is the CPU time (user + system) the running child has used so far,
// from /proc/PID/stat (Linux; clock ticks of 10 ms), plus that of every
// child of this supervisor that has exited: what a window's CPU figure is
// the difference of.
func (x *Xjob) CPU() (time.Duration, error) {
	x.mu.Lock()
	cmd, done, exited := x.cmd, x.done, x.usage.CPUSeconds
	x.mu.Unlock()
	total := time.Duration(exited * float64(time.Second))
	if cmd == nil {
		return total, nil
	}
	select {
	case <-done:
		return total, nil // accounted in usage already
	default:
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", cmd.Process.Pid))
	if err != nil {
		return 0, fmt.Errorf("xjob cpu: %w", err)
	}
	// Fields after the parenthesised command: state is field 3, utime 14, stime 15.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, errors.New("xjob cpu: bad /proc stat")
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, errors.New("xjob cpu: short /proc stat")
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, errors.New("xjob cpu: bad /proc stat times")
	}
	const tick = 10 * time.Millisecond // USER_HZ = 100 on Linux
	return total + time.Duration(ut+st)*tick, nil
}

// RSSMB is the running child's resident set (VmRSS, MB; 0 when it is not
// running).
func (x *Xjob) RSSMB() float64 {
	x.mu.Lock()
	cmd := x.cmd
	x.mu.Unlock()
	if cmd == nil {
		return 0
	}
	mb, _ := statusMB(cmd.Process.Pid, "VmRSS:")
	return mb
}

// statusMB reads one kB field of /proc/PID/status (VmRSS, VmHWM) in MB,
// to a tenth.
func statusMB(pid int, field string) (float64, bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, false
	}
	return parseStatusMB(data, field)
}

// parseStatusMB finds field ("VmHWM:") in a /proc/PID/status text.
func parseStatusMB(data []byte, field string) (float64, bool) {
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, field); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			if err != nil {
				return 0, false
			}
			return math.Round(kb/1024*10) / 10, true
		}
	}
	return 0, false
}

// Profile fetches a CPU profile of d from the child's pprof endpoint into
// path (blocking for d).
func (x *Xjob) Profile(ctx context.Context, d time.Duration, path string) error {
	return x.fetchProfile(ctx, "profile", d, path)
}

// AllocProfile fetches the allocations of the next d from the child's
// pprof endpoint into path (blocking for d): /debug/pprof/allocs with
// seconds set is the difference of two heap profiles, so it counts what
// the window allocated, not what job creation before it did.
func (x *Xjob) AllocProfile(ctx context.Context, d time.Duration, path string) error {
	return x.fetchProfile(ctx, "allocs", d, path)
}

// fetchProfile reads /debug/pprof/<what>?seconds=d into path.
func (x *Xjob) fetchProfile(ctx context.Context, what string, d time.Duration, path string) error {
	if x.spec.Pprof == "" {
		return errors.New("xjob started without --pprof-listen")
	}
	secs := max(1, int(d.Round(time.Second)/time.Second))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://%s/debug/pprof/%s?seconds=%d", x.spec.Pprof, what, secs), nil)
	if err != nil {
		return err
	}
	resp, err := (&http.Client{Timeout: d + 30*time.Second}).Do(req)
	if err != nil {
		return fmt.Errorf("%s profile: %w", what, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("%s profile: HTTP %d: %s", what, resp.StatusCode, b)
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("%s profile: %w", what, err)
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return fmt.Errorf("%s profile: %w", what, err)
	}
	return f.Close()
}

// Usage returns the accounting of every child that has exited.
func (x *Xjob) Usage() Usage {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.usage
}

// merge adds several supervisors' usage (race: three processes at once).
func merge(us ...Usage) Usage {
	var out Usage
	for _, u := range us {
		out.CPUSeconds += u.CPUSeconds
		out.PeakRSSMB = max(out.PeakRSSMB, u.PeakRSSMB)
		out.Processes += u.Processes
	}
	return out
}
