package dynamostore

// SetLogIDHash replaces db's occurrence hash behind log ids (to force
// collisions in a test).
func SetLogIDHash(db *DB, hash func(occurrenceID string) uint64) { db.idHash = hash }
