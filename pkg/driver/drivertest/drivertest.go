// Package drivertest holds the contract suites of the ports in package
// driver. Every backend runs them (SQLite always; DynamoDB and SQS against
// local emulators), which is what keeps the backends interchangeable.
//
// The suites test only what the port doc comments promise. Each suite takes
// a factory that must return a fresh, empty store (or queue) isolated from
// every other call, so subtests can run in parallel. A backend runs them
// from its own tests, one test per suite family:
//
//	func TestStoreContract(t *testing.T) {
//		drivertest.Exercise(t, func(t *testing.T) driver.Store { return openEmpty(t) })
//	}
//
// example_test.go in this package runs every suite so over the SQLite
// backend, queue included.
//
// Conditional writes on a record that does not exist may fail with either
// xjob.ErrNotFound or xjob.ErrConflict: a backend whose conditional write
// cannot tell the two apart is not forced to read first.
package drivertest

import (
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/pkg/driver"
)

// Exercise runs every store suite against stores made by newStore.
func Exercise(t *testing.T, newStore func(t *testing.T) driver.Store) {
	t.Helper()
	t.Run("JobStore", func(t *testing.T) {
		ExerciseJobStore(t, func(t *testing.T) driver.JobStore { return newStore(t) })
	})
	t.Run("GroupStore", func(t *testing.T) {
		ExerciseGroupStore(t, func(t *testing.T) driver.GroupStore { return newStore(t) })
	})
	t.Run("LogStore", func(t *testing.T) {
		ExerciseLogStore(t, func(t *testing.T) driver.LogStore { return newStore(t) })
	})
	t.Run("RegistryStore", func(t *testing.T) {
		ExerciseRegistryStore(t, func(t *testing.T) driver.RegistryStore { return newStore(t) })
	})
	t.Run("LeaseStore", func(t *testing.T) {
		ExerciseLeaseStore(t, func(t *testing.T) driver.LeaseStore { return newStore(t) })
	})
	t.Run("ReportStore", func(t *testing.T) {
		ExerciseReportStore(t, func(t *testing.T) driver.ReportStore { return newStore(t) })
	})
	t.Run("ReportGroups", func(t *testing.T) {
		ExerciseReportGroups(t, func(t *testing.T) driver.ReportStore { return newStore(t) })
	})
	t.Run("UserStore", func(t *testing.T) {
		ExerciseUserStore(t, func(t *testing.T) driver.UserStore { return newStore(t) })
	})
	t.Run("GlueStore", func(t *testing.T) {
		ExerciseGlueStore(t, func(t *testing.T) driver.GlueStore { return newStore(t) })
	})
	t.Run("Counts", func(t *testing.T) { ExerciseCounts(t, newStore) })
	t.Run("AuthStore", func(t *testing.T) {
		ExerciseAuthStore(t, func(t *testing.T) driver.AuthStore { return newStore(t) })
	})
	t.Run("ChangeStore", func(t *testing.T) {
		ExerciseChangeStore(t, newStore)
	})
}

// requireIs fails the test unless err wraps target.
func requireIs(t *testing.T, err, target error, what string) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: got error %v, want %v", what, err, target)
	}
}

// requireNoErr fails the test on err.
func requireNoErr(t *testing.T, err error, what string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// requireMissing accepts the errors a conditional write on a missing record may return.
func requireMissing(t *testing.T, err error, what string) {
	t.Helper()
	if !errors.Is(err, xjob.ErrNotFound) && !errors.Is(err, xjob.ErrConflict) {
		t.Fatalf("%s: got error %v, want ErrNotFound or ErrConflict", what, err)
	}
}

// race runs fn n times at once and returns the errors, indexed by call.
func race(n int, fn func(i int) error) []error {
	errs := make([]error, n)
	var start, done sync.WaitGroup
	start.Add(1)
	for i := range n {
		done.Add(1)
		go func() {
			defer done.Done()
			start.Wait()
			errs[i] = fn(i)
		}()
	}
	start.Done()
	done.Wait()
	return errs
}

// oneWinner checks that exactly one of errs is nil and every other wraps lost.
func oneWinner(t *testing.T, errs []error, lost error, what string) int {
	t.Helper()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Fatalf("%s: calls %d and %d both won", what, winner, i)
		case err == nil:
			winner = i
		case !errors.Is(err, lost):
			t.Fatalf("%s: call %d: got error %v, want %v", what, i, err, lost)
		}
	}
	if winner < 0 {
		t.Fatalf("%s: no call won: %v", what, errs)
	}
	return winner
}

// ids returns the ids of records, in order.
func ids[T any](recs []T, id func(T) int64) []int64 {
	out := make([]int64, len(recs))
	for i, r := range recs {
		out[i] = id(r)
	}
	return out
}

func requireIDs(t *testing.T, what string, got, want []int64) {
	t.Helper()
	if !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
		t.Fatalf("%s: got ids %v, want %v", what, got, want)
	}
}
