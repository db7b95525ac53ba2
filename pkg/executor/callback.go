package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/xjobdev/xjob/pkg/protocol"
)

// callbacks carries results to the admins. Finished runs are pushed on an
// unbounded queue; one sender drains everything queued into a single
// /api/callback request; a batch no admin accepts is written to the spool
// directory as JSON and re-sent by the retry loop.
//
// Spooled files are re-sent first and deleted only after an admin accepted
// them (xxl-job deletes first, then re-sends). A crash between send and
// delete therefore re-delivers a batch instead of losing it; the admin
// keeps the first result of a log and ignores repeats ("log repeate
// callback"), so at-least-once is the safe side. Within one process a
// mutex around the spool keeps the retry loop and shutdown from sending
// the same file twice.
type callbacks struct {
	e      *Executor
	mu     sync.Mutex
	queue  []protocol.HandleCallbackParam
	signal chan struct{} // capacity 1: "the queue is not empty"

	spoolMu  sync.Mutex
	spoolSeq atomic.Int64
}

func newCallbacks(e *Executor) *callbacks {
	return &callbacks{e: e, signal: make(chan struct{}, 1)}
}

func (c *callbacks) push(p protocol.HandleCallbackParam) {
	c.mu.Lock()
	c.queue = append(c.queue, p)
	c.mu.Unlock()
	select {
	case c.signal <- struct{}{}:
	default:
	}
}

func (c *callbacks) take() []protocol.HandleCallbackParam {
	c.mu.Lock()
	defer c.mu.Unlock()
	b := c.queue
	c.queue = nil
	return b
}

// run sends batches until ctx ends; flush sends what is left afterwards.
func (c *callbacks) run(ctx context.Context) {
	for {
		select {
		case <-c.signal:
		case <-ctx.Done():
			return
		}
		if batch := c.take(); len(batch) > 0 {
			c.deliver(context.WithoutCancel(ctx), batch)
		}
	}
}

// flush delivers (or spools) everything still queued, once.
func (c *callbacks) flush(ctx context.Context) {
	if batch := c.take(); len(batch) > 0 {
		c.deliver(ctx, batch)
	}
}

// deliver sends one batch and spools it if every admin refused. It
// reports whether an admin accepted it.
func (c *callbacks) deliver(ctx context.Context, batch []protocol.HandleCallbackParam) bool {
	err := c.e.admin.post(ctx, protocol.PathCallback, batch)
	c.noteAttempt(batch, err)
	if err == nil {
		return true
	}
	c.e.log.Warn("executor callback failed, spooling", "items", len(batch), "err", err)
	if serr := c.spool(batch); serr != nil {
		c.e.log.Error("executor callback spool failed, results lost", "items", len(batch), "err", serr)
	}
	return false
}

// noteAttempt appends the outcome to each affected run's log, as xxl-job
// does, so the admin's log page shows whether the result left the executor.
func (c *callbacks) noteAttempt(batch []protocol.HandleCallbackParam, err error) {
	msg := "----------- xjob job callback finish."
	if err != nil {
		msg = "----------- xjob job callback fail, " + err.Error()
	}
	now := c.e.now()
	for _, p := range batch {
		c.e.logs.open(p.LogDateTim, p.LogID).writeLine(now, "callback", p.LogID, msg)
	}
}

const spoolPrefix, spoolSuffix = "xjob-callback-", ".json"

// spool writes batch durably: a temporary file, fsync, then rename, so the
// retry loop never reads half a file.
func (c *callbacks) spool(batch []protocol.HandleCallbackParam) error {
	c.spoolMu.Lock()
	defer c.spoolMu.Unlock()
	return c.spoolLocked(batch)
}

func (c *callbacks) spoolLocked(batch []protocol.HandleCallbackParam) error {
	dir := c.e.cfg.SpoolDir
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("callback spool: %w", err)
	}
	data, err := json.Marshal(batch)
	if err != nil {
		return fmt.Errorf("callback spool: %w", err)
	}
	name := fmt.Sprintf("%s%013d-%06d%s", spoolPrefix, c.e.clock.Now().UnixMilli(), c.spoolSeq.Add(1), spoolSuffix)
	tmp, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return fmt.Errorf("callback spool: %w", err)
	}
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(dir, name))
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("callback spool: %w", err)
	}
	return nil
}

// spooled lists spool files oldest first.
func (c *callbacks) spooled() ([]string, error) {
	entries, err := os.ReadDir(c.e.cfg.SpoolDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("callback spool list: %w", err)
	}
	var names []string
	for _, e := range entries {
		n := e.Name()
		if !e.IsDir() && strings.HasPrefix(n, spoolPrefix) && strings.HasSuffix(n, spoolSuffix) {
			names = append(names, filepath.Join(c.e.cfg.SpoolDir, n))
		}
	}
	sort.Strings(names) // zero-padded millis and sequence: lexical = chronological
	return names, nil
}

// resend delivers spooled batches oldest first, deleting each file only
// after an admin accepted it, and stops at the first failure (the admins
// are still down; the next round tries again). It returns how many files
// were delivered.
func (c *callbacks) resend(ctx context.Context) (int, error) {
	c.spoolMu.Lock()
	defer c.spoolMu.Unlock()
	names, err := c.spooled()
	if err != nil {
		return 0, err
	}
	sent := 0
	for _, name := range names {
		data, err := os.ReadFile(name)
		if err != nil {
			return sent, fmt.Errorf("callback resend: %w", err)
		}
		var batch []protocol.HandleCallbackParam
		if err := json.Unmarshal(data, &batch); err != nil {
			// Keep the bytes for a person, out of the retry path.
			bad := name + ".bad-" + strconv.FormatInt(c.e.clock.Now().UnixMilli(), 10)
			c.e.log.Error("executor callback spool file unreadable, set aside", "file", bad, "err", err)
			_ = os.Rename(name, bad)
			continue
		}
		if len(batch) > 0 {
			perr := c.e.admin.post(ctx, protocol.PathCallback, batch)
			c.noteAttempt(batch, perr)
			if perr != nil {
				return sent, fmt.Errorf("callback resend: %w", perr)
			}
		}
		if err := os.Remove(name); err != nil {
			return sent, fmt.Errorf("callback resend: %w", err)
		}
		sent++
	}
	return sent, nil
}

// retryLoop re-sends spooled batches every CallbackRetryInterval until ctx ends.
func (c *callbacks) retryLoop(ctx context.Context) {
	for {
		if err := c.e.clock.SleepUntil(ctx, c.e.clock.Now().Add(c.e.cfg.CallbackRetryInterval)); err != nil {
			return
		}
		if n, err := c.resend(ctx); err != nil && ctx.Err() == nil {
			c.e.log.Warn("executor callback retry failed", "delivered_files", n, "err", err)
		}
	}
}
