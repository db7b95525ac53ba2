//go:build race

package local

// raceEnabled builds the child binary with -race too, reusing the
// race-instrumented packages the test binary was built from.
const raceEnabled = true
