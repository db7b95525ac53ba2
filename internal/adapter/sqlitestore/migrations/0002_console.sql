-- 0002: console users and saved GLUE sources.

CREATE TABLE users (
    username      TEXT    PRIMARY KEY,
    password_hash TEXT    NOT NULL,
    role          INTEGER NOT NULL,
    group_ids     TEXT    NOT NULL, -- comma-separated, as xxl-job's permission
    locale        TEXT    NOT NULL,
    version       INTEGER NOT NULL,
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE glue_versions (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id      INTEGER NOT NULL,
    glue_type   TEXT    NOT NULL,
    source      TEXT    NOT NULL,
    remark      TEXT    NOT NULL,
    created_at  INTEGER NOT NULL
);
CREATE INDEX glue_versions_job ON glue_versions (job_id, created_at DESC, id DESC);
