package local

import (
	"context"

	"github.com/xjobdev/xjob/internal/adapter/mysqlstore"
	"github.com/xjobdev/xjob/internal/adapter/pgstore"
)

// The cluster stores by URL scheme. Each takes its shard count on first
// use and refuses another later, applies its migrations under a database
// lock, and keeps the URL's password out of every error.
func init() {
	pg := func(ctx context.Context, p openParams) (clusterStore, error) {
		return pgstore.Open(ctx, p.URL, pgstore.Options{Shards: p.Shards, Clock: p.Clock, Logger: p.Logger, Node: p.Node})
	}
	clusterStores["postgres"] = pg
	clusterStores["postgresql"] = pg
	my := func(ctx context.Context, p openParams) (clusterStore, error) {
		dsn, err := mysqlstore.ParseURL(p.URL)
		if err != nil {
			return nil, err
		}
		return mysqlstore.Open(ctx, dsn, mysqlstore.Options{Shards: p.Shards, Clock: p.Clock, Logger: p.Logger, Node: p.Node})
	}
	clusterStores["mysql"] = my
	clusterStores["mariadb"] = my
}
