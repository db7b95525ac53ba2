-- 0013: the per-job log index, entered in batches. As an index of logs
-- keyed by job first (logs_job_time), every trigger's entry landed on a
-- leaf of its job's own: a steady second of 10,000 every-second jobs
-- dirtied 10,000 index leaves, which every commit wrote to the WAL and
-- every checkpoint copied again (most of a trigger's WAL pages). Its
-- entries now live in logs_by_job, which the writer fills a batch at a
-- time (sqlitestore's jobIndexBatch): one INSERT … SELECT in key order, so
-- that a job's entries of many seconds share one leaf write and no log
-- row is written again. Every log with an id at or below
-- logs_by_job_through.through has its entry; a per-job read takes the
-- entries and walks the rowid range above the mark (about a batch at
-- most) for the others. The triggers keep the entries of entered logs
-- true: a deleted log loses its entry, a log whose trigger time a claim
-- moves moves its entry. Logs' job ids never change.
CREATE TABLE logs_by_job (
    job_id       INTEGER NOT NULL,
    trigger_time INTEGER NOT NULL,
    id           INTEGER NOT NULL,
    PRIMARY KEY (job_id, trigger_time, id)
) WITHOUT ROWID;

INSERT INTO logs_by_job (job_id, trigger_time, id) SELECT job_id, trigger_time, id FROM logs;
DROP INDEX logs_job_time;

-- One row: every log with an id at or below through has its entry.
CREATE TABLE logs_by_job_through (
    one     INTEGER PRIMARY KEY CHECK (one = 1),
    through INTEGER NOT NULL
);
INSERT INTO logs_by_job_through (one, through) SELECT 1, coalesce(max(id), 0) FROM logs;

CREATE TRIGGER logs_by_job_delete AFTER DELETE ON logs BEGIN
    DELETE FROM logs_by_job
     WHERE job_id = old.job_id AND trigger_time = old.trigger_time AND id = old.id;
END;

CREATE TRIGGER logs_by_job_retime AFTER UPDATE OF trigger_time ON logs
    WHEN new.trigger_time != old.trigger_time BEGIN
    UPDATE logs_by_job SET trigger_time = new.trigger_time
     WHERE job_id = old.job_id AND trigger_time = old.trigger_time AND id = old.id;
END;
