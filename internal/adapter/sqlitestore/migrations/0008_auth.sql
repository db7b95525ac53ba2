-- 0008: what signing in shares between processes: attempt counters of the
-- sign-in limiter and sessions ended before their cookie expires.

CREATE TABLE auth_attempts (
    key          TEXT    PRIMARY KEY,
    window_start INTEGER NOT NULL, -- Unix ms
    expires_at   INTEGER NOT NULL, -- window_start + window
    count        INTEGER NOT NULL
) WITHOUT ROWID;

CREATE INDEX auth_attempts_expiry ON auth_attempts (expires_at);

CREATE TABLE revoked_sessions (
    id         TEXT    PRIMARY KEY,
    expires_at INTEGER NOT NULL -- when the cookie would have ended (Unix ms)
) WITHOUT ROWID;

CREATE INDEX revoked_sessions_expiry ON revoked_sessions (expires_at);
