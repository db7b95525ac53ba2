package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/xjobdev/xjob/pkg/driver"
)

// LogsCalling is driver.CallFence's: in one write transaction, each log
// still at its expected version and untriggered gets its version bumped.
// SQLite's claims name no node and only ReleaseClaims, at an
// installation's restart, ends them early, so the mark is the version
// alone; what it guards against here is a claim that changed hands
// since (the dispatcher's tests of the fence run on this store).
func (db *DB) LogsCalling(ctx context.Context, logs []driver.LogRef) ([]driver.LogRef, error) {
	if len(logs) == 0 {
		return nil, nil
	}
	var kept []driver.LogRef
	err := db.write(ctx, func(ctx context.Context, conn *sql.Conn) error {
		kept = kept[:0]
		for _, l := range logs {
			res, err := conn.ExecContext(ctx, `UPDATE logs SET version = version + 1
				WHERE id = ? AND version = ? AND trigger_code = 0`, l.ID, l.Version)
			if err != nil {
				return err
			}
			if n, err := res.RowsAffected(); err != nil {
				return err
			} else if n == 1 {
				kept = append(kept, driver.LogRef{ID: l.ID, Version: l.Version + 1})
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite logs calling: %w", err)
	}
	return kept, nil
}
