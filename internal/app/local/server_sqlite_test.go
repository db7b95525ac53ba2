package local

import (
	"context"
	"strings"

	"github.com/xjobdev/xjob/internal/adapter/sqlitestore"
)

// Tests run cluster nodes over one SQLite file too (sqlite://PATH): the
// cluster logic then runs on every machine, in seconds, whatever database
// servers it has. Several processes on one file are a supported shape of
// local mode already; `xjob server` itself accepts only PostgreSQL and
// MySQL.
func init() {
	clusterStores["sqlite"] = func(ctx context.Context, p openParams) (clusterStore, error) {
		return sqlitestore.Open(ctx, strings.TrimPrefix(p.URL, "sqlite://"), sqlitestore.Options{Shards: p.Shards, Clock: p.Clock, Logger: p.Logger})
	}
}
