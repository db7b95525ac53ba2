-- 0001: the whole cluster-mode schema. Instants are Unix milliseconds.
--
-- Every statement creates one table with its indexes, IF NOT EXISTS: MySQL
-- commits each DDL statement on its own, so a migration that stopped
-- half-way (a crash, a lost connection) is simply run again.
--
-- Text is utf8mb4 with the binary collation: comparisons, uniqueness,
-- ordering and substring filters are byte-exact and case-sensitive, as
-- SQLite's are. Keys that are identifiers (occurrence ids, queue names,
-- node ids) are VARBINARY: compact in their indexes and exact.

CREATE TABLE IF NOT EXISTS jobs (
    id                BIGINT       NOT NULL AUTO_INCREMENT, -- InnoDB never reuses ids, across restarts too
    name              VARCHAR(255) NOT NULL,
    shard             INT          NOT NULL,
    group_id          BIGINT       NOT NULL,
    description       TEXT         NOT NULL,
    author            TEXT         NOT NULL,
    alarm_email       TEXT         NOT NULL,
    schedule_type     VARCHAR(64)  NOT NULL,
    schedule_conf     TEXT         NOT NULL,
    time_zone         VARCHAR(255) NOT NULL,
    misfire_strategy  VARCHAR(64)  NOT NULL,
    route_strategy    VARCHAR(64)  NOT NULL,
    handler           TEXT         NOT NULL,
    param             MEDIUMTEXT   NOT NULL,
    block_strategy    VARCHAR(64)  NOT NULL,
    timeout_seconds   BIGINT       NOT NULL,
    fail_retry_count  BIGINT       NOT NULL,
    glue_type         VARCHAR(64)  NOT NULL,
    glue_source       MEDIUMTEXT   NOT NULL,
    glue_remark       TEXT         NOT NULL,
    glue_updated_at   BIGINT       NOT NULL,
    child_job_ids     TEXT         NOT NULL, -- comma-separated, as xxl-job's child_jobid
    trigger_status    TINYINT      NOT NULL,
    trigger_last_time BIGINT       NOT NULL,
    trigger_next_time BIGINT       NOT NULL,
    version           BIGINT       NOT NULL,
    revision          BIGINT       NOT NULL,
    slow_minute       BIGINT       NOT NULL DEFAULT 0,
    slow_count        BIGINT       NOT NULL DEFAULT 0,
    created_at        BIGINT       NOT NULL,
    updated_at        BIGINT       NOT NULL,
    after_completion  VARCHAR(16)  NOT NULL,
    declared          MEDIUMTEXT   NOT NULL,
    applied           MEDIUMTEXT   NOT NULL,
    PRIMARY KEY (id),
    -- The due index. MySQL has no partial index: running jobs are the
    -- trigger_status = 1 prefix, so a scan of one shard reads only the
    -- due running jobs, in (next time, id) order.
    KEY jobs_due (trigger_status, shard, trigger_next_time, id),
    KEY jobs_group (group_id, id),
    KEY jobs_by_name (name)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

CREATE TABLE IF NOT EXISTS job_groups ( -- GROUPS is a reserved word in MySQL 8
    id           BIGINT       NOT NULL AUTO_INCREMENT,
    app_name     VARCHAR(255) NOT NULL,
    title        VARCHAR(255) NOT NULL,
    address_type INT          NOT NULL,
    address_list MEDIUMTEXT   NOT NULL, -- JSON array
    version      BIGINT       NOT NULL,
    updated_at   BIGINT       NOT NULL,
    PRIMARY KEY (id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

CREATE TABLE IF NOT EXISTS logs (
    id                        BIGINT         NOT NULL AUTO_INCREMENT,
    occurrence_id             VARBINARY(255) NOT NULL,
    -- The time half of the occurrence key: the fire time of a scheduled
    -- (CRON or MISFIRE) occurrence, which its id names, else 0 (a
    -- retry's scheduled time is not part of its id). Keyed time first,
    -- one second's claims land at one end of the unique index.
    occurrence_time           BIGINT         NOT NULL,
    -- A random number per LogCreateMany call: the rows a multi-row
    -- insert created carry the caller's, the ones it found carry
    -- another's, which is how one statement claims a whole bucket.
    created_by                BIGINT         NOT NULL,
    job_id                    BIGINT         NOT NULL,
    group_id                  BIGINT         NOT NULL,
    trigger_type              VARCHAR(32)    NOT NULL,
    scheduled_time            BIGINT         NOT NULL,
    trigger_time              BIGINT         NOT NULL,
    trigger_code              INT            NOT NULL,
    trigger_msg               MEDIUMTEXT     NOT NULL,
    executor_address          VARCHAR(1024)  NOT NULL,
    executor_handler          TEXT           NOT NULL,
    executor_param            MEDIUMTEXT     NOT NULL,
    executor_sharding_param   VARCHAR(255)   NOT NULL,
    executor_fail_retry_count INT            NOT NULL,
    handle_time               BIGINT         NOT NULL,
    handle_code               INT            NOT NULL,
    handle_msg                MEDIUMTEXT     NOT NULL,
    alarm_status              INT            NOT NULL,
    claim_until               BIGINT         NOT NULL,
    version                   BIGINT         NOT NULL,
    -- xjob.Log.Failed, kept by the server so that an index can hold it
    -- (MySQL has no partial index).
    failed TINYINT GENERATED ALWAYS AS (
        CASE WHEN handle_code NOT IN (0, 200) OR (handle_code = 0 AND trigger_code NOT IN (0, 200))
             THEN 1 ELSE 0 END) STORED,
    PRIMARY KEY (id),
    UNIQUE KEY logs_occurrence (occurrence_time, occurrence_id),
    KEY logs_job_time (job_id, trigger_time, id),
    KEY logs_group_time (group_id, trigger_time, id),
    KEY logs_time (trigger_time, id), -- list all, retention
    -- Running logs (the lost-job check) are the (0, 200) prefix.
    KEY logs_running (handle_code, trigger_code, trigger_time, id),
    -- Failed logs not alarmed yet (the fail monitor's backstop) are the
    -- (1, 0) prefix; failed logs of every group, the 1 prefix.
    KEY logs_failed (failed, alarm_status, trigger_time, id),
    KEY logs_group_failed (group_id, failed, trigger_time, id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

CREATE TABLE IF NOT EXISTS registry (
    grp        VARCHAR(64)  NOT NULL,
    `key`      VARCHAR(128) NOT NULL, -- the primary key fits InnoDB's 3072 bytes
    value      VARCHAR(512) NOT NULL,
    updated_at BIGINT        NOT NULL,
    PRIMARY KEY (grp, `key`, value),
    KEY registry_key_updated (`key`, updated_at),
    KEY registry_updated (updated_at)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

CREATE TABLE IF NOT EXISTS leases (
    name       VARBINARY(255) NOT NULL,
    owner      VARBINARY(255) NOT NULL, -- '' when released
    token      BIGINT         NOT NULL,
    expires_at BIGINT         NOT NULL,
    PRIMARY KEY (name)
) ENGINE = InnoDB;

CREATE TABLE IF NOT EXISTS report_days (
    day           VARCHAR(16) NOT NULL, -- yyyy-mm-dd
    group_id      BIGINT      NOT NULL,
    running_count BIGINT      NOT NULL,
    suc_count     BIGINT      NOT NULL,
    fail_count    BIGINT      NOT NULL,
    PRIMARY KEY (day, group_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

CREATE TABLE IF NOT EXISTS queue_messages (
    id         BIGINT        NOT NULL AUTO_INCREMENT,
    queue      VARBINARY(64) NOT NULL,
    body       MEDIUMBLOB    NOT NULL, -- JSON
    visible_at BIGINT        NOT NULL,
    receives   INT           NOT NULL DEFAULT 0,
    receipt    VARBINARY(32) NOT NULL DEFAULT '', -- '' until received
    node       VARBINARY(255) NOT NULL DEFAULT '', -- the receiver's Options.Node
    PRIMARY KEY (id),
    KEY queue_visible (queue, visible_at, id)
) ENGINE = InnoDB;

CREATE TABLE IF NOT EXISTS users (
    username      VARCHAR(255) NOT NULL,
    password_hash VARCHAR(255) NOT NULL,
    role          INT          NOT NULL,
    group_ids     TEXT         NOT NULL, -- comma-separated, as xxl-job's permission
    locale        VARCHAR(64)  NOT NULL,
    version       BIGINT       NOT NULL,
    created_at    BIGINT       NOT NULL,
    updated_at    BIGINT       NOT NULL,
    PRIMARY KEY (username)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

CREATE TABLE IF NOT EXISTS glue_versions (
    id         BIGINT      NOT NULL AUTO_INCREMENT,
    job_id     BIGINT      NOT NULL,
    glue_type  VARCHAR(64) NOT NULL,
    source     MEDIUMTEXT  NOT NULL,
    remark     TEXT        NOT NULL,
    created_at BIGINT      NOT NULL,
    PRIMARY KEY (id),
    KEY glue_versions_job (job_id, created_at, id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

CREATE TABLE IF NOT EXISTS declarations_retired (
    `key`    VARCHAR(255) NOT NULL,
    declared MEDIUMTEXT   NOT NULL,
    PRIMARY KEY (`key`)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

CREATE TABLE IF NOT EXISTS auth_attempts (
    `key`        VARCHAR(255) NOT NULL,
    window_start BIGINT       NOT NULL, -- Unix ms
    expires_at   BIGINT       NOT NULL, -- window_start + window
    count        BIGINT       NOT NULL,
    PRIMARY KEY (`key`),
    KEY auth_attempts_expiry (expires_at)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

CREATE TABLE IF NOT EXISTS revoked_sessions (
    id         VARBINARY(255) NOT NULL,
    expires_at BIGINT         NOT NULL, -- when the cookie would have ended (Unix ms)
    PRIMARY KEY (id),
    KEY revoked_sessions_expiry (expires_at)
) ENGINE = InnoDB;

-- What the cluster agreed on once and every node must match: the scan
-- shard count, digests of shared secrets.
CREATE TABLE IF NOT EXISTS meta (
    name  VARBINARY(255) NOT NULL,
    value VARBINARY(1024) NOT NULL,
    PRIMARY KEY (name)
) ENGINE = InnoDB;

-- The live xjob server nodes, for spreading the scan shards over them.
CREATE TABLE IF NOT EXISTS nodes (
    id         VARBINARY(255) NOT NULL,
    addr       VARCHAR(1024)  NOT NULL,
    expires_at BIGINT         NOT NULL, -- Unix ms; the node is gone after it
    PRIMARY KEY (id),
    KEY nodes_expiry (expires_at)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
