-- 0007: the claim's deduplication index, time first. Keyed by occurrence
-- id alone ("j<job>/t<fire>/s<shard>": job first), the claims of one busy
-- second landed on as many index leaves as the second has jobs, and every
-- commit wrote and every checkpoint copied those leaves again. Keyed by
-- the fire time first they append at one end of the index. Uniqueness is
-- unchanged: the key's time is a function of the occurrence id, the fire
-- time a scheduled (CRON or MISFIRE) id names, and 0 for the others
-- (whose scheduled_time is not part of their id: a deferred retry carries
-- when it was first due). sqlLogOccurrenceKey is this expression.
DROP INDEX logs_occurrence;
CREATE UNIQUE INDEX logs_occurrence ON logs (
    (CASE WHEN trigger_type IN ('CRON', 'MISFIRE') THEN scheduled_time ELSE 0 END), occurrence_id);
