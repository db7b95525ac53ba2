// Package emulator runs the local AWS stand-ins — dynalite for DynamoDB,
// fauxqs for SQS and SNS — as Node child processes on 127.0.0.1, from the
// packages `make emulators` installs in test/emulators, and moto's server
// (SSM Parameter Store) as a Python one (`make moto`), and builds test SDK
// clients for them. It has two users: the emulated deployment
// (internal/testenv/awsstack) starts its own processes with StartDynalite,
// StartFauxqs and StartMoto; the adapter and end-to-end tests share one
// process of each per test binary (Dynalite, Fauxqs, DynamoDB, SQS, Main),
// so the two cannot drift apart in how they find, start, wait for and stop
// them.
//
// A process prints "READY <port>" once it listens; Start waits for that
// line. It also exits by itself when its stdin closes, which happens when
// the Go process dies however it dies, so no emulator outlives its parent.
package emulator

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ErrNotInstalled marks a start that failed because the emulators are not
// installed (no node on PATH, or test/emulators/node_modules missing)
// rather than broken, so that a test can say which make target installs
// them (tool.Missing) rather than report a broken start.
var ErrNotInstalled = errors.New("emulators not installed")

// dynaliteScript runs test/emulators/dynalite.js as is: it already listens
// on 127.0.0.1 only.
const dynaliteScript = "dynalite.js"

// fauxqsLoopback starts fauxqs as test/emulators/fauxqs.js does, except
// that it listens on 127.0.0.1: fauxqs hard-codes 0.0.0.0, so the one
// listen call is rewritten before fauxqs is loaded. It runs with --eval
// from test/emulators, so that 'fauxqs' resolves from its node_modules.
const fauxqsLoopback = `
import net from 'node:net'
const listen = net.Server.prototype.listen
net.Server.prototype.listen = function (...args) {
  if (args[0] && typeof args[0] === 'object' && (args[0].host === '0.0.0.0' || args[0].host === undefined)) {
    args[0] = { ...args[0], host: '127.0.0.1' }
  }
  return listen.apply(this, args)
}
const { startFauxqs } = await import('fauxqs')
const server = await startFauxqs({ port: parseInt(process.argv[1] || '0', 10), logger: false })
process.stdout.write('READY ' + server.port + '\n')
process.stdin.on('end', () => process.exit(0))
process.stdin.on('error', () => process.exit(0))
process.stdin.resume()
`

// Usage is what the kernel accounted to one emulator process: the load
// harness reports it next to the pipeline's own figures.
type Usage struct {
	Name       string  `json:"name"`
	CPUSeconds float64 `json:"cpuSeconds"`
	PeakRSSMB  float64 `json:"peakRssMB"`
}

// Process is one running emulator.
type Process struct {
	name     string
	cmd      *exec.Cmd
	stdin    io.Closer
	endpoint string
	done     chan struct{}
	stopOnce sync.Once

	mu    sync.Mutex
	usage Usage
}

// Dir returns root/test/emulators, root being the module root: the given
// one, or the first directory holding go.mod above the working directory
// (a package directory under go test). The error wraps ErrNotInstalled
// when the emulators' node_modules is missing.
func Dir(root string) (string, error) {
	if root == "" {
		dir, err := os.Getwd()
		if err != nil {
			return "", fmt.Errorf("emulator dir: %w", err)
		}
		for {
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				root = dir
				break
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				return "", errors.New("emulator dir: no go.mod above the working directory (give the module root)")
			}
			dir = parent
		}
	}
	dir := filepath.Join(root, "test", "emulators")
	if _, err := os.Stat(filepath.Join(dir, "node_modules")); err != nil {
		return "", fmt.Errorf("%w: %s is missing: make test or make emulators (npm ci --prefix test/emulators) installs them", ErrNotInstalled, filepath.Join(dir, "node_modules"))
	}
	return dir, nil
}

// StartDynalite starts dynalite from dir (see Dir), in memory, and waits
// up to timeout for it to listen.
func StartDynalite(dir string, timeout time.Duration) (*Process, error) {
	return start("dynalite", dir, timeout, dynaliteScript, "0")
}

// StartFauxqs starts fauxqs (SQS and SNS) from dir (see Dir) on loopback
// and waits up to timeout for it to listen.
func StartFauxqs(dir string, timeout time.Duration) (*Process, error) {
	return start("fauxqs", dir, timeout, "--input-type=module", "-e", fauxqsLoopback, "0")
}

// motoServer runs moto's server (AWS services in Python; xjob uses its
// SSM Parameter Store) on 127.0.0.1, on a port of the system's choosing,
// prints READY <port> and exits when stdin closes, as the Node emulators do.
const motoServer = `
import logging, sys
logging.getLogger("werkzeug").setLevel(logging.ERROR)
from moto.server import ThreadedMotoServer
s = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
s.start()
print("READY", s._server.server_port, flush=True)
sys.stdin.read()
s.stop()
`

// StartMoto starts moto's server (SSM Parameter Store for the functions'
// secrets) on loopback and waits up to timeout for it to listen. It needs
// python3 with moto (make moto installs it with pip).
func StartMoto(timeout time.Duration) (*Process, error) {
	py, err := exec.LookPath("python3")
	if err != nil {
		return nil, fmt.Errorf("emulator moto: %w: python3 not found on PATH (then run make moto): %w", ErrNotInstalled, err)
	}
	if out, err := exec.Command(py, "-c", "import moto.server, flask").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("emulator moto: %w: python3 cannot import moto's server (run make moto): %s", ErrNotInstalled, strings.TrimSpace(string(out)))
	}
	return startProgram("moto", py, "", timeout, "-c", motoServer)
}

// start runs node with args in dir and waits for READY.
func start(name, dir string, timeout time.Duration, args ...string) (*Process, error) {
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, fmt.Errorf("emulator %s: %w: node not found on PATH: install Node 20, then make test or make emulators installs the emulators: %w", name, ErrNotInstalled, err)
	}
	return startProgram(name, node, dir, timeout, args...)
}

// startProgram runs program with args in dir and waits for READY.
func startProgram(name, program, dir string, timeout time.Duration, args ...string) (*Process, error) {
	cmd := exec.Command(program, args...)
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("emulator %s: %w", name, err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("emulator %s: %w", name, err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("emulator %s: start: %w", name, err)
	}
	p := &Process{name: name, cmd: cmd, stdin: stdin, done: make(chan struct{}), usage: Usage{Name: name}}
	go func() {
		_ = cmd.Wait()
		p.account(cmd.ProcessState)
		close(p.done)
	}()
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if port, ok := strings.CutPrefix(sc.Text(), "READY "); ok {
				ready <- strings.TrimSpace(port)
				break
			}
		}
		_, _ = io.Copy(io.Discard, stdout) // keep the pipe drained
	}()
	select {
	case port := <-ready:
		p.endpoint = "http://127.0.0.1:" + port
		return p, nil
	case <-p.done:
		return nil, fmt.Errorf("emulator %s: exited before it was ready", name)
	case <-time.After(timeout):
		p.Stop()
		return nil, fmt.Errorf("emulator %s: not ready after %v", name, timeout)
	}
}

// Endpoint is the process's base URL (http://127.0.0.1:port), the
// BaseEndpoint of SDK clients.
func (p *Process) Endpoint() string { return p.endpoint }

// Stop closes the child's stdin (it exits on its own, and its CPU time is
// accounted), then kills it if it has not gone within a second. It is safe
// to call more than once.
func (p *Process) Stop() {
	p.stopOnce.Do(func() {
		_ = p.stdin.Close()
		select {
		case <-p.done:
		case <-time.After(time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
}

// Usage returns the kernel's accounting of the process; it is complete
// once the process has exited (after Stop).
func (p *Process) Usage() Usage {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.usage
}

func (p *Process) account(ps *os.ProcessState) {
	if ps == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.usage.CPUSeconds = (ps.UserTime() + ps.SystemTime()).Seconds()
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		p.usage.PeakRSSMB = float64(ru.Maxrss) / 1024 // Linux: KiB
	}
}
