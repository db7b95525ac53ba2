package executor

import (
	"os/exec"
	"strings"
	"testing"
)

// The core SDK must not pull in AWS or database code (STYLE habit 2):
// the Lambda adapter lives in lambdaexec.
func TestCoreDependencies(t *testing.T) {
	t.Parallel()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go tool not on PATH")
	}
	out, err := exec.Command(goBin, "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, banned := range []string{"github.com/aws/", "database/sql", "sqlite"} {
			if strings.Contains(dep, banned) {
				t.Errorf("pkg/executor depends on %s", dep)
			}
		}
	}
}
