package harness

import (
	"os/exec"
	"runtime"
	"testing"
)

func TestParseStatusMB(t *testing.T) {
	t.Parallel()
	status := []byte("Name:\txjob\nVmPeak:\t 2000000 kB\nVmHWM:\t  153600 kB\nVmRSS:\t   51200 kB\nThreads:\t9\n")
	tests := []struct {
		field  string
		want   float64
		wantOK bool
	}{
		{"VmHWM:", 150, true},
		{"VmRSS:", 50, true},
		{"VmSwap:", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.field, func(t *testing.T) {
			t.Parallel()
			got, ok := parseStatusMB(status, tt.field)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("parseStatusMB(%s) = %v, %v; want %v, %v", tt.field, got, ok, tt.want, tt.wantOK)
			}
		})
	}
	if _, ok := parseStatusMB([]byte("VmHWM:\tlots kB\n"), "VmHWM:"); ok {
		t.Error("a field that is not a number parsed")
	}
}

// A child's peak is its own: the rusage of a child started while this
// process holds 128 MB says at least 128 MB (Linux keeps the high water of
// the memory the child left at exec, and os/exec starts it on the
// parent's), while a sleep uses a few MB. The supervisor must report the
// few.
func TestPeakRSSIsTheChilds(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("VmHWM and ru_maxrss are Linux's")
	}
	held := make([]byte, 128<<20)
	for i := range held {
		held[i] = 1
	}
	x := NewXjob(XjobSpec{})
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	x.cmd, x.done = cmd, done
	go func() {
		_ = cmd.Wait()
		x.account(cmd.ProcessState)
		close(done)
	}()
	x.Kill()
	runtime.KeepAlive(held)
	u := x.Usage()
	if u.Processes != 1 {
		t.Fatalf("accounted %d processes, want 1", u.Processes)
	}
	if got := u.PeakRSSMB; got > 32 {
		t.Fatalf("peak RSS of a sleep = %.1f MB, want its own few MB (the parent holds 128)", got)
	}
}
