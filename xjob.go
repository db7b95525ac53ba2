// Package xjob holds the domain of the xjob scheduler: jobs, executor groups,
// registry entries, trigger logs and fire occurrences, with their validation.
//
// These types are what every other package speaks. They carry no storage or
// transport concerns: adapters (SQLite, DynamoDB, SQS) translate them at their
// boundary, and the core services (scan, ring, dispatch, callback, registry)
// take and return them through the ports in package driver.
//
// Enum strings are spelled exactly as xxl-job spells them, because they cross
// the wire to unmodified xxl-job executors and appear in migrated data.
// All instants are Unix milliseconds, UTC.
package xjob

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors that adapters map their vendor errors to, so that services
// can branch on meaning rather than on SQL or AWS error codes.
var (
	// ErrNotFound: the addressed record does not exist.
	ErrNotFound = errors.New("not found")
	// ErrConflict: a conditional write lost (stale version, existing key).
	ErrConflict = errors.New("conflict")
	// ErrLeaseHeld: another owner holds an unexpired lease.
	ErrLeaseHeld = errors.New("lease held by another owner")
	// ErrLeaseLost: the caller's lease expired or was taken over (its fencing
	// token is stale); the caller must stop acting on the leased resource.
	ErrLeaseLost = errors.New("lease lost")
)

// ValidationError reports bad input field by field. Callers at the edge
// (admin API, CLI) turn it into a 4xx reply; nothing is written when it is
// returned.
type ValidationError struct {
	Problems []FieldProblem
}

// FieldProblem names one invalid field and why it is invalid.
type FieldProblem struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

func (e *ValidationError) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.Field + ": " + p.Message
	}
	return "invalid input: " + strings.Join(parts, "; ")
}

// problems accumulates field problems; err returns nil when there are none.
type problems []FieldProblem

func (p *problems) add(field, format string, args ...any) {
	*p = append(*p, FieldProblem{Field: field, Message: fmt.Sprintf(format, args...)})
}

func (p problems) err() error {
	if len(p) == 0 {
		return nil
	}
	return &ValidationError{Problems: p}
}
