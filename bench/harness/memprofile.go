package harness

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// MemSample is one look at a running xjob's memory: the kernel's resident
// set beside the Go runtime's view of it (runtime.MemStats, read from the
// text form of /debug/pprof/heap, which does not force a collection).
// What RSS holds beyond the runtime's Sys − HeapReleased is memory the Go
// runtime did not map: SQLite's page cache and statements, allocated by
// modernc's libc outside the Go heap.
type MemSample struct {
	AtMs         int64   `json:"atMs"` // since sampling started (xjob up, no jobs yet)
	RSSMB        float64 `json:"rssMB"`
	HeapAllocMB  float64 `json:"heapAllocMB"`
	HeapInuseMB  float64 `json:"heapInuseMB"`
	HeapIdleMB   float64 `json:"heapIdleMB"`
	HeapRelMB    float64 `json:"heapReleasedMB"`
	StackInuseMB float64 `json:"stackInuseMB"`
	SysMB        float64 `json:"sysMB"`
	NextGCMB     float64 `json:"nextGcMB"`
	NumGC        int64   `json:"numGc"`
	Goroutines   int     `json:"goroutines"`
	// OutsideGoMB is RSS − (Sys − HeapReleased): resident memory the Go
	// runtime never allocated (an estimate: Sys counts mapped, not
	// necessarily resident, pages, so this is a lower bound).
	OutsideGoMB float64 `json:"outsideGoMB"`
}

// MemoryFigures are a run's memory samples and the heap profiles taken at
// the window's middle and at the sample with the largest RSS.
type MemoryFigures struct {
	Samples []MemSample `json:"samples"`
	// MidProfile and PeakProfile are heap profiles (inuse and alloc sample
	// types); the *Top fields are their `go tool pprof -top` tables.
	MidProfile  string `json:"midProfile,omitempty"`
	PeakProfile string `json:"peakProfile,omitempty"`
	PeakAtMs    int64  `json:"peakAtMs"`
	// WindowFromMs and WindowToMs place the measured window on the
	// samples' time axis.
	WindowFromMs   int64    `json:"windowFromMs"`
	WindowToMs     int64    `json:"windowToMs"`
	MidInuseTop    []string `json:"midInuseTop,omitempty"`
	PeakInuseTop   []string `json:"peakInuseTop,omitempty"`
	PeakAllocTop   []string `json:"peakAllocTop,omitempty"`
	SamplingErrors []string `json:"samplingErrors,omitempty"`
}

// memSampleEvery is how often the heap sampler looks at xjob: often enough
// to see the sawtooth of the collector under 10,000 fires a second, rarely
// enough that the profile reads stay a small share of the window's CPU.
const memSampleEvery = 2 * time.Second

// sampleMemory samples x every memSampleEvery from now (job creation
// included: the API's writes are part of the process's peak) until stop is
// closed. window delivers the measured window's start once it is known; the
// heap profile taken nearest its middle and the one at the largest RSS are
// kept (prefix-mid.heap.pprof, prefix-peak.heap.pprof).
func sampleMemory(ctx context.Context, x *Xjob, window <-chan Interval, prefix string, stop <-chan struct{}) *MemoryFigures {
	m := &MemoryFigures{}
	if x.spec.Pprof == "" {
		m.SamplingErrors = append(m.SamplingErrors, "xjob started without --pprof-listen")
		return m
	}
	start := time.Now()
	var mid time.Time // zero until the window is known
	tmp := prefix + "-sample.heap.pprof"
	defer os.Remove(tmp)
	peak, midTaken := -1.0, false
	tick := time.NewTicker(memSampleEvery)
	defer tick.Stop()
	for {
		select {
		case w := <-window:
			m.WindowFromMs = w.From - start.UnixMilli()
			m.WindowToMs = w.To - start.UnixMilli()
			mid = time.UnixMilli(w.From + (w.To-w.From)/2)
		default:
		}
		now := time.Now()
		s, err := x.memSample(ctx)
		if err != nil {
			m.SamplingErrors = append(m.SamplingErrors, err.Error())
		} else {
			s.AtMs = now.Sub(start).Milliseconds()
			m.Samples = append(m.Samples, s)
			isMid := !midTaken && !mid.IsZero() && !now.Before(mid)
			if isMid || s.RSSMB > peak {
				if err := x.fetchPprof(ctx, "heap", tmp); err != nil {
					m.SamplingErrors = append(m.SamplingErrors, err.Error())
				} else {
					if isMid {
						midTaken = true
						m.MidProfile = prefix + "-mid.heap.pprof"
						_ = copyFile(tmp, m.MidProfile)
					}
					if s.RSSMB > peak {
						peak, m.PeakAtMs = s.RSSMB, s.AtMs
						m.PeakProfile = prefix + "-peak.heap.pprof"
						_ = copyFile(tmp, m.PeakProfile)
					}
				}
			}
		}
		select {
		case <-stop:
			return m
		case <-ctx.Done():
			return m
		case <-tick.C:
		}
	}
}

// topTables fills the pprof -top tables of the kept heap profiles.
func (m *MemoryFigures) topTables(ctx context.Context, bin string) {
	if m.MidProfile != "" {
		m.MidInuseTop = heapTop(ctx, bin, m.MidProfile, "inuse_space")
	}
	if m.PeakProfile != "" {
		m.PeakInuseTop = heapTop(ctx, bin, m.PeakProfile, "inuse_space")
		m.PeakAllocTop = heapTop(ctx, bin, m.PeakProfile, "alloc_space")
	}
}

// heapTop runs `go tool pprof -top` on a heap profile for one sample type
// and writes the table beside it.
func heapTop(ctx context.Context, bin, profile, index string) []string {
	out, err := exec.CommandContext(ctx, "go", "tool", "pprof", "-top", "-nodecount=20", "-sample_index="+index, bin, profile).CombinedOutput()
	if err != nil {
		return []string{"pprof: " + err.Error()}
	}
	txt := strings.TrimSuffix(profile, ".pprof") + "-" + index + "-top.txt"
	_ = os.WriteFile(txt, out, 0o644)
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if strings.HasPrefix(l, "File:") || strings.HasPrefix(l, "Build ID:") || strings.HasPrefix(l, "Type:") || strings.HasPrefix(l, "Time:") {
			continue
		}
		lines = append(lines, l)
	}
	return lines
}

// memSample reads the child's RSS, its runtime.MemStats (the trailer of
// /debug/pprof/heap?debug=1) and its goroutine count.
func (x *Xjob) memSample(ctx context.Context) (MemSample, error) {
	s := MemSample{RSSMB: x.RSSMB()}
	body, err := x.getPprof(ctx, "heap?debug=1")
	if err != nil {
		return s, err
	}
	ms, err := parseMemStats(body)
	if err != nil {
		return s, err
	}
	mb := func(k string) float64 { return math.Round(float64(ms[k])/(1<<20)*10) / 10 }
	s.HeapAllocMB, s.HeapInuseMB, s.HeapIdleMB, s.HeapRelMB = mb("HeapAlloc"), mb("HeapInuse"), mb("HeapIdle"), mb("HeapReleased")
	s.StackInuseMB, s.SysMB, s.NextGCMB, s.NumGC = mb("Stack"), mb("Sys"), mb("NextGC"), ms["NumGC"]
	s.OutsideGoMB = math.Round((s.RSSMB-(s.SysMB-s.HeapRelMB))*10) / 10
	g, err := x.getPprof(ctx, "goroutine?debug=1")
	if err == nil {
		s.Goroutines = goroutineTotal(g)
	}
	return s, nil
}

// parseMemStats reads the "# Name = value" lines runtime/pprof appends to
// a debug=1 heap profile. Stack is "# Stack = inuse / sys": the first.
func parseMemStats(r io.Reader) (map[string]int64, error) {
	out := map[string]int64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	inStats := false
	for sc.Scan() {
		l := sc.Text()
		if l == "# runtime.MemStats" {
			inStats = true
			continue
		}
		if !inStats {
			continue
		}
		k, v, ok := strings.Cut(strings.TrimPrefix(l, "# "), " = ")
		if !ok {
			continue
		}
		v, _, _ = strings.Cut(v, " ")
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			out[k] = n
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("heap profile: %w", err)
	}
	if !inStats {
		return nil, fmt.Errorf("heap profile: no runtime.MemStats trailer")
	}
	return out, nil
}

// goroutineTotal reads "goroutine profile: total N" from a debug=1
// goroutine profile (0 when absent).
func goroutineTotal(r io.Reader) int {
	sc := bufio.NewScanner(r)
	if sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "goroutine profile: total "); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return 0
}

// getPprof reads one /debug/pprof/ endpoint of the child into memory.
func (x *Xjob) getPprof(ctx context.Context, what string) (io.Reader, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://%s/debug/pprof/%s", x.spec.Pprof, what), nil)
	if err != nil {
		return nil, err
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return nil, fmt.Errorf("pprof %s: %w", what, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("pprof %s: %s", what, resp.Status)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("pprof %s: %w", what, err)
	}
	return strings.NewReader(string(b)), nil
}

// fetchPprof saves one binary /debug/pprof/ profile of the child to path.
func (x *Xjob) fetchPprof(ctx context.Context, what, path string) error {
	body, err := x.getPprof(ctx, what)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("pprof %s: %w", what, err)
	}
	if _, err := io.Copy(f, body); err != nil {
		_ = f.Close()
		return fmt.Errorf("pprof %s: %w", what, err)
	}
	return f.Close()
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o644)
}

// PrintMemory writes a run's memory samples as a markdown table and the
// top holders of its heap profiles.
func PrintMemory(w io.Writer, r *Result) {
	m := r.Memory
	fmt.Fprintf(w, "\nMemory, %s (%s): window %.0f–%.0f s, peak sample at %.1f s, xjob peak RSS (VmHWM) %.0f MB\n", r.Scenario, r.Target,
		float64(m.WindowFromMs)/1000, float64(m.WindowToMs)/1000, float64(m.PeakAtMs)/1000, r.Usage.PeakRSSMB)
	fmt.Fprintln(w, "| t s | RSS MB | HeapAlloc | HeapInuse | HeapIdle | HeapReleased | StackInuse | Sys | NextGC | GCs | goroutines | outside Go MB |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, s := range m.Samples {
		fmt.Fprintf(w, "| %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %d | %d | %.1f |\n", float64(s.AtMs)/1000, s.RSSMB,
			s.HeapAllocMB, s.HeapInuseMB, s.HeapIdleMB, s.HeapRelMB, s.StackInuseMB, s.SysMB, s.NextGCMB, s.NumGC, s.Goroutines, s.OutsideGoMB)
	}
	for _, t := range []struct {
		name  string
		lines []string
	}{{"inuse_space at the middle", m.MidInuseTop}, {"inuse_space at the peak", m.PeakInuseTop}, {"alloc_space at the peak", m.PeakAllocTop}} {
		if len(t.lines) == 0 {
			continue
		}
		fmt.Fprintf(w, "\nheap %s:\n", t.name)
		for _, l := range t.lines[:min(len(t.lines), 14)] {
			fmt.Fprintln(w, "  "+l)
		}
	}
	for _, e := range m.SamplingErrors {
		fmt.Fprintln(w, "memory sampling: "+e)
	}
}
