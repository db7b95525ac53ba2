package dynamostore

import (
	"context"
	"fmt"

	"github.com/xjobdev/xjob/pkg/driver"
)

// LogClear pages the scope's logs newest first through LogList (the time
// index), skips the newest p.KeepNewest, and deletes up to
// p.Limit of the rest triggered before p.Before, oldest first. Clearing
// is a rare console action, so it reads the kept logs again on every call
// rather than keep a cursor: simple, and correct while new logs arrive
// between calls.
func (db *DB) LogClear(ctx context.Context, p driver.LogClearParams) (int, error) {
	limit := clampLimit(p.Limit, 1000, 100000)
	lp := driver.LogListParams{GroupID: p.GroupID, JobID: p.JobID, Limit: 1000}
	if p.KeepNewest == 0 && p.Before != 0 {
		lp.To = p.Before - 1 // nothing to skip: read only what may go
	}
	var doomed []int64
	skip := p.KeepNewest
	for {
		page, err := db.LogList(ctx, lp)
		if err != nil {
			return 0, fmt.Errorf("dynamo log clear: %w", err)
		}
		for _, l := range page.Logs {
			switch {
			case skip > 0:
				skip--
			case p.Before == 0 || l.TriggerTime < p.Before:
				doomed = append(doomed, l.ID)
			}
		}
		if page.Next == "" {
			break
		}
		lp.Cursor = page.Next
	}
	// Oldest first: the list was newest first.
	doomed = doomed[max(0, len(doomed)-limit):]
	count, err := db.deleteLogs(ctx, doomed)
	if err != nil {
		return 0, fmt.Errorf("dynamo log clear: %w", err)
	}
	return count, nil
}
