-- 0006: declarations whose job a person deleted (key → the declaration as
-- it was): an executor declaring the same definition again does not
-- re-create the job; a changed declaration does.
CREATE TABLE declarations_retired (
    key      TEXT PRIMARY KEY,
    declared TEXT NOT NULL
) WITHOUT ROWID;
