-- 0009: the run report per day and group, so that the report of a user
-- limited to some groups is a read of their counters. The day's existing
-- counters become group 0 ("no one group"): the installation's report,
-- which sums every group, still counts them; a group's report starts
-- from this migration on.
CREATE TABLE report_days_by_group (
    day           TEXT    NOT NULL, -- yyyy-mm-dd
    group_id      INTEGER NOT NULL DEFAULT 0,
    running_count INTEGER NOT NULL,
    suc_count     INTEGER NOT NULL,
    fail_count    INTEGER NOT NULL,
    PRIMARY KEY (day, group_id)
) WITHOUT ROWID;

INSERT INTO report_days_by_group (day, group_id, running_count, suc_count, fail_count)
    SELECT day, 0, running_count, suc_count, fail_count FROM report_days;

DROP TABLE report_days;

ALTER TABLE report_days_by_group RENAME TO report_days;
