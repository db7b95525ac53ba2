-- 0010: failed logs by group and by time, newest first, so that "the
-- latest failures" of a group (or of every group) reads the failures, not
-- every log back to the first failure: a group that seldom fails would
-- otherwise scan all of its logs. The WHERE is sqlLogFailed word for
-- word, which is what lets the planner use the partial index.
CREATE INDEX logs_group_failed ON logs (group_id, trigger_time, id)
    WHERE (handle_code NOT IN (0, 200) OR (handle_code = 0 AND trigger_code NOT IN (0, 200)));
CREATE INDEX logs_failed ON logs (trigger_time, id)
    WHERE (handle_code NOT IN (0, 200) OR (handle_code = 0 AND trigger_code NOT IN (0, 200)));
