-- 0008: what a manifest (apply or import) last declared for a job, so the
-- next apply leaves alone the fields a person changed in xjob since.
ALTER TABLE jobs ADD COLUMN applied TEXT NOT NULL DEFAULT '';
