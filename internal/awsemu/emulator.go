package awsemu

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

// ProcessUsage is what the kernel accounted to one emulator process.
type ProcessUsage struct {
	Name       string  `json:"name"`
	CPUSeconds float64 `json:"cpuSeconds"`
	PeakRSSMB  float64 `json:"peakRssMB"`
}

// emulator is one Node child process printing "READY <port>".
type emulator struct {
	name     string
	cmd      *exec.Cmd
	stdin    io.Closer
	endpoint string
	done     chan struct{}

	mu    sync.Mutex
	usage ProcessUsage
}

// emulatorDir returns root/test/emulators, root being the module root:
// the given one, or the first directory holding go.mod above the working
// directory.
func emulatorDir(root string) (string, error) {
	if root == "" {
		dir, err := os.Getwd()
		if err != nil {
			return "", fmt.Errorf("awsemu: %w", err)
		}
		for {
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				root = dir
				break
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				return "", errors.New("awsemu: no go.mod above the working directory (set Options.Root)")
			}
			dir = parent
		}
	}
	dir := filepath.Join(root, "test", "emulators")
	if _, err := os.Stat(filepath.Join(dir, "node_modules")); err != nil {
		return "", fmt.Errorf("awsemu: %s is missing: run make emulators (npm ci --prefix test/emulators)", filepath.Join(dir, "node_modules"))
	}
	return dir, nil
}

// startEmulator runs node with args in dir and waits for READY. The child
// also exits when its stdin closes, i.e. when this process dies.
func startEmulator(name, dir string, timeout time.Duration, args ...string) (*emulator, error) {
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, fmt.Errorf("awsemu %s: node not found on PATH (Node 20 runs the emulators): %w", name, err)
	}
	cmd := exec.Command(node, args...)
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("awsemu %s: %w", name, err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("awsemu %s: %w", name, err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("awsemu %s: start: %w", name, err)
	}
	e := &emulator{name: name, cmd: cmd, stdin: stdin, done: make(chan struct{}), usage: ProcessUsage{Name: name}}
	go func() {
		_ = cmd.Wait()
		e.account(cmd.ProcessState)
		close(e.done)
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
		e.endpoint = "http://127.0.0.1:" + port
		return e, nil
	case <-e.done:
		return nil, fmt.Errorf("awsemu %s: exited before it was ready", name)
	case <-time.After(timeout):
		e.stop()
		return nil, fmt.Errorf("awsemu %s: not ready after %v", name, timeout)
	}
}

func (e *emulator) account(ps *os.ProcessState) {
	if ps == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.usage.CPUSeconds = (ps.UserTime() + ps.SystemTime()).Seconds()
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		e.usage.PeakRSSMB = float64(ru.Maxrss) / 1024 // Linux: KiB
	}
}

// stop closes the child's stdin (it exits on its own), then kills it if it
// has not gone within a second.
func (e *emulator) stop() {
	_ = e.stdin.Close()
	select {
	case <-e.done:
	case <-time.After(time.Second):
		_ = e.cmd.Process.Kill()
		<-e.done
	}
}

func (e *emulator) Usage() ProcessUsage {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.usage
}
