-- 0012: the nodes of a cluster (driver.NodeStore). Local mode runs one
-- process, but the table lets the node membership run over SQLite too,
-- the backend its tests always have.
CREATE TABLE nodes (
    id         TEXT PRIMARY KEY,
    addr       TEXT NOT NULL,
    expires_at INTEGER NOT NULL
);

-- What every node of a cluster must agree on (a digest of its secrets),
-- stored by the first node.
CREATE TABLE cluster_secrets (
    name   TEXT PRIMARY KEY,
    digest TEXT NOT NULL
);
