package dynamostore

import (
	"context"
	"sync"
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
	return perGroup(ctx, n, key, func(ctx context.Context, items []int) error {
		for _, i := range items {
			if err := fn(ctx, i); err != nil {
				return err
			}
		}
		return nil
	})
}

// perGroup groups items 0..n-1 by key and runs fn once per group, with the
// group's items in batch order: groups concurrently, at most
// batchConcurrency at once. The first failure stops the batch and is
// returned.
func perGroup[K comparable](ctx context.Context, n int, key func(i int) K, fn func(ctx context.Context, items []int) error) error {
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
			if err := fn(ctx, items); err != nil {
				mu.Lock()
				if fatal == nil {
					fatal = err
					cancel() // the call has failed: stop sending the rest
				}
				mu.Unlock()
			}
		}(byKey[k])
	}
	wg.Wait()
	if fatal == nil && ctx.Err() != nil {
		fatal = ctx.Err()
	}
	return fatal
}

// perPage runs change once per log page the items of a batch fall in
// (page(i) names item i's), pages concurrently, at most batchConcurrency
// at once: change gets the page and the indices of its items in batch
// order, and is re-run on the page's fresh state whenever another writer
// changed the page first (mutatePage). The first failure of a whole page
// stops the batch and is returned.
func (db *DB) perPage(ctx context.Context, n int, page func(i int) int64, change func(p *logPage, items []int) (bool, error)) error {
	return perGroup(ctx, n, page, func(ctx context.Context, items []int) error {
		return db.mutatePage(ctx, page(items[0]), func(p *logPage) (bool, error) { return change(p, items) })
	})
}
