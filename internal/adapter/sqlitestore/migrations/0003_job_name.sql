-- 0003: a job's optional stable name, the key of jobs-as-code files (xjob apply).
ALTER TABLE jobs ADD COLUMN name TEXT NOT NULL DEFAULT '';
