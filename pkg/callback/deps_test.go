package callback

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoBackendImports keeps the core free of backend code: a Lambda binary
// built from this package must not pull in AWS SDKs or SQLite.
func TestNoBackendImports(t *testing.T) {
	t.Parallel()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go tool not on PATH")
	}
	out, err := exec.Command(goBin, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, banned := range []string{"github.com/aws/", "database/sql", "sqlite", "github.com/xjobdev/xjob/pkg/sqlitestore"} {
			if strings.Contains(dep, banned) {
				t.Errorf("imports %s (matches %q)", dep, banned)
			}
		}
	}
}
