-- 0001: the whole local-mode schema. Instants are Unix milliseconds.

CREATE TABLE jobs (
    id                INTEGER PRIMARY KEY AUTOINCREMENT, -- AUTOINCREMENT: ids are never reused
    shard             INTEGER NOT NULL DEFAULT 0,
    group_id          INTEGER NOT NULL,
    description       TEXT    NOT NULL,
    author            TEXT    NOT NULL,
    alarm_email       TEXT    NOT NULL,
    schedule_type     TEXT    NOT NULL,
    schedule_conf     TEXT    NOT NULL,
    time_zone         TEXT    NOT NULL,
    misfire_strategy  TEXT    NOT NULL,
    route_strategy    TEXT    NOT NULL,
    handler           TEXT    NOT NULL,
    param             TEXT    NOT NULL,
    block_strategy    TEXT    NOT NULL,
    timeout_seconds   INTEGER NOT NULL,
    fail_retry_count  INTEGER NOT NULL,
    glue_type         TEXT    NOT NULL,
    glue_source       TEXT    NOT NULL,
    glue_remark       TEXT    NOT NULL,
    glue_updated_at   INTEGER NOT NULL,
    child_job_ids     TEXT    NOT NULL, -- comma-separated, as xxl-job's child_jobid
    trigger_status    INTEGER NOT NULL,
    trigger_last_time INTEGER NOT NULL,
    trigger_next_time INTEGER NOT NULL,
    version           INTEGER NOT NULL,
    revision          INTEGER NOT NULL,
    slow_minute       INTEGER NOT NULL DEFAULT 0,
    slow_count        INTEGER NOT NULL DEFAULT 0,
    created_at        INTEGER NOT NULL,
    updated_at        INTEGER NOT NULL
);

-- The due index holds running jobs only, so a scan costs O(due jobs).
CREATE INDEX jobs_due ON jobs (shard, trigger_next_time, id) WHERE trigger_status = 1;
CREATE INDEX jobs_group ON jobs (group_id, id);

CREATE TABLE groups (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    app_name     TEXT    NOT NULL,
    title        TEXT    NOT NULL,
    address_type INTEGER NOT NULL,
    address_list TEXT    NOT NULL, -- JSON array
    version      INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL
);

CREATE TABLE logs (
    id                        INTEGER PRIMARY KEY AUTOINCREMENT,
    occurrence_id             TEXT    NOT NULL,
    job_id                    INTEGER NOT NULL,
    group_id                  INTEGER NOT NULL,
    trigger_type              TEXT    NOT NULL,
    scheduled_time            INTEGER NOT NULL,
    trigger_time              INTEGER NOT NULL,
    trigger_code              INTEGER NOT NULL,
    trigger_msg               TEXT    NOT NULL,
    executor_address          TEXT    NOT NULL,
    executor_handler          TEXT    NOT NULL,
    executor_param            TEXT    NOT NULL,
    executor_sharding_param   TEXT    NOT NULL,
    executor_fail_retry_count INTEGER NOT NULL,
    handle_time               INTEGER NOT NULL,
    handle_code               INTEGER NOT NULL,
    handle_msg                TEXT    NOT NULL,
    alarm_status              INTEGER NOT NULL,
    claim_until               INTEGER NOT NULL,
    version                   INTEGER NOT NULL
);

CREATE UNIQUE INDEX logs_occurrence ON logs (occurrence_id);
CREATE INDEX logs_job_time ON logs (job_id, trigger_time, id);
CREATE INDEX logs_group_time ON logs (group_id, trigger_time, id);
CREATE INDEX logs_time ON logs (trigger_time, id); -- list all, retention
CREATE INDEX logs_running ON logs (trigger_time, id) WHERE trigger_code = 200 AND handle_code = 0;
CREATE INDEX logs_failed_unalarmed ON logs (trigger_time, id)
    WHERE alarm_status = 0
      AND (handle_code NOT IN (0, 200) OR (handle_code = 0 AND trigger_code NOT IN (0, 200)));

CREATE TABLE registry (
    grp        TEXT    NOT NULL,
    key        TEXT    NOT NULL,
    value      TEXT    NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (grp, key, value)
) WITHOUT ROWID;

CREATE INDEX registry_key_updated ON registry (key, updated_at);
CREATE INDEX registry_updated ON registry (updated_at);

CREATE TABLE leases (
    name       TEXT PRIMARY KEY,
    owner      TEXT    NOT NULL, -- '' when released
    token      INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE report_days (
    day           TEXT PRIMARY KEY, -- yyyy-mm-dd
    running_count INTEGER NOT NULL,
    suc_count     INTEGER NOT NULL,
    fail_count    INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE queue_messages (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    queue      TEXT    NOT NULL,
    body       TEXT    NOT NULL, -- JSON
    visible_at INTEGER NOT NULL,
    receives   INTEGER NOT NULL DEFAULT 0,
    receipt    TEXT    NOT NULL DEFAULT ''
);

CREATE INDEX queue_visible ON queue_messages (queue, visible_at, id);
