package executor

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/xjobdev/xjob/pkg/protocol"
)

// logDateLayout names the date folders, xxl-job's yyyy-MM-dd.
const logDateLayout = "2006-01-02"

// logStore lays out per-run logs as {dir}/{yyyy-MM-dd}/{logId}.log, the
// date taken from the trigger's logDateTime in loc.
type logStore struct {
	dir    string
	loc    *time.Location
	mirror *lockedWriter // optional copy of every job log line
}

// lockedWriter serialises writes from concurrent runs to one writer.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) write(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, _ = io.WriteString(l.w, s)
}

func (s *logStore) path(logDateTime, logID int64) string {
	day := time.UnixMilli(logDateTime).In(s.loc).Format(logDateLayout)
	return filepath.Join(s.dir, day, strconv.FormatInt(logID, 10)+".log")
}

func (s *logStore) open(logDateTime, logID int64) *runLog {
	return &runLog{path: s.path(logDateTime, logID), mirror: s.mirror}
}

// runLog appends lines to one run's file. Each write opens the file in
// append mode, so a handler still logging after its run was reported
// (timeout, kill) cannot write to a closed file.
type runLog struct {
	path   string
	mirror *lockedWriter
	mu     sync.Mutex
	err    error // first write error, kept so it is reported once
}

// writeLine appends "yyyy-MM-dd HH:mm:ss [handler]-[logId] msg", one file
// line per line of msg.
func (l *runLog) writeLine(now time.Time, handler string, logID int64, msg string) {
	prefix := fmt.Sprintf("%s [%s]-[%d] ", now.Format("2006-01-02 15:04:05"), handler, logID)
	var b strings.Builder
	for _, line := range strings.Split(strings.ReplaceAll(msg, "\r\n", "\n"), "\n") {
		b.WriteString(prefix)
		b.WriteString(line)
		b.WriteString("\n")
	}
	l.append(b.String())
}

func (l *runLog) append(text string) {
	if l.mirror != nil {
		l.mirror.write(text)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := os.MkdirAll(filepath.Dir(l.path), 0o700); err != nil {
		l.err = err
		return
	}
	f, err := os.OpenFile(l.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		l.err = err
		return
	}
	_, err = f.WriteString(text)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		l.err = err
	}
}

// read answers /log exactly as xxl-job's XxlJobFileAppender.readLog: every
// line numbered >= fromLineNum (1-based), each followed by "\n"; toLineNum
// is the number of lines in the file; isEnd is false unless the file does
// not exist, because only the admin knows whether the run has finished.
func (s *logStore) read(p protocol.LogParam) (protocol.LogResult, error) {
	f, err := os.Open(s.path(p.Date(), p.LogID))
	if errors.Is(err, os.ErrNotExist) {
		return protocol.LogResult{FromLineNum: p.FromLineNum, ToLineNum: 0,
			LogContent: protocol.MsgLogFileNotExists, IsEnd: true}, nil
	}
	if err != nil {
		return protocol.LogResult{}, fmt.Errorf("log read: %w", err)
	}
	defer f.Close()
	r := bufio.NewReader(f)
	var b strings.Builder
	n := 0
	for {
		line, err := r.ReadString('\n')
		if line != "" {
			n++
			if n >= p.FromLineNum {
				line = strings.TrimSuffix(line, "\n")
				line = strings.TrimSuffix(line, "\r")
				b.WriteString(line)
				b.WriteString("\n")
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return protocol.LogResult{}, fmt.Errorf("log read: %w", err)
		}
	}
	return protocol.LogResult{FromLineNum: p.FromLineNum, ToLineNum: n, LogContent: b.String()}, nil
}

// clean deletes date folders at least days old, measured from today's
// midnight in loc like xxl-job (today - folderDate >= days). Other
// entries (the callback spool, stray files) are left alone.
func (s *logStore) clean(now time.Time, days int) (removed int, err error) {
	if days <= 0 {
		return 0, nil
	}
	entries, err := os.ReadDir(s.dir)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("log clean: %w", err)
	}
	now = now.In(s.loc)
	today := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, s.loc)
	cutoff := today.AddDate(0, 0, -days)
	var errs []error
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		day, perr := time.ParseInLocation(logDateLayout, e.Name(), s.loc)
		if perr != nil || day.After(cutoff) {
			continue
		}
		if rerr := os.RemoveAll(filepath.Join(s.dir, e.Name())); rerr != nil {
			errs = append(errs, rerr)
			continue
		}
		removed++
	}
	if len(errs) > 0 {
		return removed, fmt.Errorf("log clean: %w", errors.Join(errs...))
	}
	return removed, nil
}
