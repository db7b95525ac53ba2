package local

import (
	"context"
	"log/slog"
	"strings"

	"github.com/xjobdev/xjob/internal/adapter/sqlitestore"
	"github.com/xjobdev/xjob/pkg/clock"
)

// Tests run cluster nodes over one SQLite file too (sqlite://PATH): the
// cluster logic then runs on every machine, in seconds, whatever database
// servers it has. Several processes on one file are a supported shape of
// local mode already; `xjob server` itself accepts only PostgreSQL and
// MySQL.
func init() {
	clusterStores["sqlite"] = func(ctx context.Context, dbURL string, shards int, clk clock.Clock, logger *slog.Logger) (clusterStore, error) {
		return sqlitestore.Open(ctx, strings.TrimPrefix(dbURL, "sqlite://"), sqlitestore.Options{Shards: shards, Clock: clk, Logger: logger})
	}
}
