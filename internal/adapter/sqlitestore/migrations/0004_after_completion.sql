-- 0004: what becomes of a ONCE job after its fire (KEEP or DELETE).
-- Existing jobs keep theirs.
ALTER TABLE jobs ADD COLUMN after_completion TEXT NOT NULL DEFAULT 'KEEP';
