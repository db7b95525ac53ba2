package driver

import (
	"context"
	"errors"
)

// ErrContended is a write a store gave up after one lost round because
// OneRound asked it to: another writer changed the same record between
// its read and its conditional write. Nothing of it was written, and it
// is no verdict (not xjob.ErrConflict): sent again, it may well succeed.
var ErrContended = errors.New("lost a conditional round to a concurrent writer")

type oneRoundKey struct{}

// OneRound asks a store that writes by optimistic rounds (read, change,
// conditional write, and again when another writer came in between) to
// give up after the first lost round and answer ErrContended for the
// items of that record, rather than read and write again with backoff.
// A caller with a cheaper place for the write than a queue of retries on
// one hot record passes it: the callback function's quiet path, whose
// many execution environments would otherwise retry on the same log page
// in lockstep, hands a lost result to the results queue instead, where
// one applier writes it with others. Only LogFinishMany heeds it; a store
// that locks rather than retries (the SQL stores) never loses a round
// and may ignore it.
func OneRound(ctx context.Context) context.Context {
	return context.WithValue(ctx, oneRoundKey{}, true)
}

// IsOneRound reports whether ctx carries OneRound's request.
func IsOneRound(ctx context.Context) bool {
	v, _ := ctx.Value(oneRoundKey{}).(bool)
	return v
}
