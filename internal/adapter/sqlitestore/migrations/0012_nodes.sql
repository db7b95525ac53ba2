-- 0012: the nodes of a cluster (driver.NodeStore). Local mode runs one
-- process, but the table lets the node membership run over SQLite too,
-- the backend its tests always have.
CREATE TABLE nodes (
    id         TEXT PRIMARY KEY,
    addr       TEXT NOT NULL,
    expires_at INTEGER NOT NULL
);
