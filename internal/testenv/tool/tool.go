// Package tool is the one gate in front of every test that needs a program
// from outside Go: the AWS emulators (dynalite, fauxqs on Node), Chromium
// for the console's browser tests, MariaDB for the xxl-job import tests,
// PostgreSQL for the PostgreSQL store, promtool for the alert rules.
//
// A plain `go test ./...` runs those tests and fails, with one line saying
// how to install what is missing, rather than skipping them: a run that
// prints ok while testing nothing is worse than a red one. `go test -short`
// is the quick run that needs nothing outside Go: it skips them all, found
// or not. `make test` installs them all and runs without -short.
package tool

import (
	"fmt"
	"testing"
)

// SkipIfShort skips t under go test -short; what names the outside
// program the test needs.
func SkipIfShort(t testing.TB, what string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("needs %s: skipped under -short", what)
	}
}

// Missing fails t because an outside program is not installed; err says
// which, and which make target installs it. Under -short it skips
// instead, for callers that look before calling SkipIfShort.
func Missing(t testing.TB, err error) {
	t.Helper()
	msg := fmt.Sprintf("%v (go test -short skips this test)", err)
	if testing.Short() {
		t.Skip(msg)
	}
	t.Fatal(msg)
}
