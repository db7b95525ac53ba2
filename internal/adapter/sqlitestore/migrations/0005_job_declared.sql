-- 0005: the definition an executor declared for a job (empty when a person
-- or a file created it), and the lookup of a job by its name.
ALTER TABLE jobs ADD COLUMN declared TEXT NOT NULL DEFAULT '';
CREATE INDEX jobs_by_name ON jobs (name) WHERE name != '';
