-- The node whose dispatch claimed an untriggered log (Options.Node), so
-- that ReleaseNodeClaims can expire a dead node's log claims with its
-- queue messages: a ring bucket redelivered after its node died finds
-- the logs that node prepared and takes them over at once, instead of
-- after the claim TTL (30 s).
ALTER TABLE logs ADD COLUMN claimed_by VARBINARY(255) NOT NULL DEFAULT '';
