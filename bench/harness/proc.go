package harness

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
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

// XjobSpec is how to start one `xjob local` child.
type XjobSpec struct {
	Bin    string
	DB     string
	Listen string // host:port on loopback
	Token  string // admin token
	Shards int
	// LogPath receives the child's stdout and stderr (JSON process log,
	// debug level: the harness reads scan tick times from it).
	LogPath string
	// Env is added to the child's environment (e.g. XJOBBENCH_CPUPROFILE).
	Env []string
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
}

// NewXjob prepares a supervisor; nothing runs until Start.
func NewXjob(spec XjobSpec) *Xjob { return &Xjob{spec: spec} }

// URL is the child's base address.
func (x *Xjob) URL() string { return "http://" + x.spec.Listen }

// Start launches the child and waits until /healthz answers (at most
// timeout). It returns when the API is reachable; the scanner ticks from the
// next whole second on.
func (x *Xjob) Start(ctx context.Context, timeout time.Duration) error {
	logf, err := os.OpenFile(x.spec.LogPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("xjob log: %w", err)
	}
	shards := x.spec.Shards
	if shards == 0 {
		shards = 16
	}
	cmd := exec.Command(x.spec.Bin, "local", "--db", x.spec.DB, "--listen", x.spec.Listen,
		"--shards", fmt.Sprint(shards), "--log-level", "debug", "--grace", "5s")
	cmd.Env = append(os.Environ(), "XJOB_ADMIN_TOKEN="+x.spec.Token, "XJOB_ACCESS_TOKEN="+LocalAccessToken, "XJOB_DEMO=")
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
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, x.URL()+"/healthz", nil)
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
			return errors.New("xjob did not answer /healthz in time")
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
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		x.usage.PeakRSSMB = max(x.usage.PeakRSSMB, float64(ru.Maxrss)/1024) // Linux: KiB
	}
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
