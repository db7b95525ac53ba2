package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/pkg/driver"
)

// batchConcurrency bounds the single-item writes one batch method has in
// flight: enough to hide the round trip, few enough not to burst a table's
// write capacity or the SDK's connection pool.
const batchConcurrency = 16

// perKey runs fn for items 0..n-1 of a batch: items with the same key one
// after the other in their order (so the outcome is that of calling the
// single-item method for each in turn), different keys concurrently, at
// most batchConcurrency at once. fn returns only failures of the whole
// call (per-item outcomes it stores itself); the first one stops the
// batch and is returned.
func perKey[K comparable](ctx context.Context, n int, key func(i int) K, fn func(ctx context.Context, i int) error) error {
	if n == 0 {
		return nil
	}
	byKey := map[K][]int{}
	var order []K
	for i := range n {
		k := key(i)
		if _, ok := byKey[k]; !ok {
			order = append(order, k)
		}
		byKey[k] = append(byKey[k], i)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg    sync.WaitGroup
		sem   = make(chan struct{}, batchConcurrency)
		mu    sync.Mutex
		fatal error
	)
	for _, k := range order {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func(items []int) {
			defer func() { <-sem; wg.Done() }()
			for _, i := range items {
				if err := fn(ctx, i); err != nil {
					mu.Lock()
					if fatal == nil {
						fatal = err
						cancel() // the call has failed: stop sending the rest
					}
					mu.Unlock()
					return
				}
			}
		}(byKey[k])
	}
	wg.Wait()
	if fatal == nil && ctx.Err() != nil {
		fatal = ctx.Err()
	}
	return fatal
}

// LogGetMany reads the logs among ids with strongly consistent
// BatchGetItem reads (a callback may follow its trigger closely).
func (db *DB) LogGetMany(ctx context.Context, ids []int64) ([]xjob.Log, error) {
	keys := make([]item, 0, len(ids))
	seen := map[int64]bool{}
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			keys = append(keys, logKey(id))
		}
	}
	items, err := db.batchGet(ctx, db.t.Logs, keys, true)
	if err != nil {
		return nil, fmt.Errorf("dynamo log get many: %w", err)
	}
	logs := make([]xjob.Log, len(items))
	for i, it := range items {
		logs[i] = decodeLog(it)
	}
	return logs, nil
}

// LogCreateMany claims each occurrence with LogCreate's two conditional
// puts and, for an untriggered log whose claim expired, LogClaim's
// conditional update (a lost take-over means another dispatcher took it:
// ClaimHeld). Items run as perKey does, keyed by occurrence.
func (db *DB) LogCreateMany(ctx context.Context, logs []xjob.Log) ([]driver.LogCreated, error) {
	out := make([]driver.LogCreated, len(logs))
	err := perKey(ctx, len(logs), func(i int) string { return logs[i].OccurrenceID }, func(ctx context.Context, i int) error {
		var err error
		out[i], err = db.claimOccurrence(ctx, logs[i])
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("dynamo log create many: %w", err)
	}
	return out, nil
}

func (db *DB) claimOccurrence(ctx context.Context, l xjob.Log) (driver.LogCreated, error) {
	created, err := db.LogCreate(ctx, l)
	var verr *xjob.ValidationError
	switch {
	case err == nil:
		return driver.LogCreated{Outcome: driver.ClaimCreated, Log: created}, nil
	case errors.As(err, &verr):
		return driver.LogCreated{Err: err}, nil
	case !errors.Is(err, xjob.ErrConflict):
		return driver.LogCreated{}, err
	}
	prev := created
	outcome := driver.ClaimOutcomeOf(prev, l.TriggerTime)
	if outcome != driver.ClaimTakenOver {
		return driver.LogCreated{Outcome: outcome, Log: prev}, nil
	}
	taken, err := db.LogClaim(ctx, driver.LogClaimParams{ID: prev.ID, ExpectVersion: prev.Version,
		ClaimUntil: l.ClaimUntil, TriggerTime: l.TriggerTime})
	switch {
	case errors.Is(err, xjob.ErrConflict), errors.Is(err, xjob.ErrNotFound):
		// Another delivery took it over (or it was purged) meanwhile.
		return driver.LogCreated{Outcome: driver.ClaimHeld, Log: prev}, nil
	case err != nil:
		return driver.LogCreated{}, err
	}
	return driver.LogCreated{Outcome: driver.ClaimTakenOver, Log: taken, Prev: prev}, nil
}

// LogTriggeredMany records each reply with LogTriggered's conditional
// updates, as perKey runs them (keyed by log id).
func (db *DB) LogTriggeredMany(ctx context.Context, ps []driver.LogTriggeredParams) ([]error, error) {
	errs := make([]error, len(ps))
	err := perKey(ctx, len(ps), func(i int) int64 { return ps[i].ID }, func(ctx context.Context, i int) error {
		err := db.LogTriggered(ctx, ps[i])
		if err == nil || errors.Is(err, xjob.ErrConflict) || errors.Is(err, xjob.ErrNotFound) {
			errs[i] = err
			return nil
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("dynamo log triggered many: %w", err)
	}
	return errs, nil
}

// LogFinishMany records each result with LogFinish's conditional update,
// as perKey runs them (keyed by log id).
func (db *DB) LogFinishMany(ctx context.Context, ps []driver.LogFinishParams) ([]driver.LogFinished, error) {
	out := make([]driver.LogFinished, len(ps))
	err := perKey(ctx, len(ps), func(i int) int64 { return ps[i].ID }, func(ctx context.Context, i int) error {
		l, err := db.LogFinish(ctx, ps[i])
		if err == nil || errors.Is(err, xjob.ErrConflict) || errors.Is(err, xjob.ErrNotFound) {
			out[i] = driver.LogFinished{Log: l, Err: err}
			return nil
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("dynamo log finish many: %w", err)
	}
	return out, nil
}
