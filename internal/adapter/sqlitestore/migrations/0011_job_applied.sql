-- 0011 (shipped first as 0008_job_applied, see formerly in sqlitestore.go):
-- what a manifest (apply or import) last declared for a job, so the
-- next apply leaves alone the fields a person changed in xjob since.
ALTER TABLE jobs ADD COLUMN applied TEXT NOT NULL DEFAULT '';
