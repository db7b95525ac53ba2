package lambdaapp_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/xjobdev/xjob/internal/adapter/awsconfig"
)

// TestFunctionsHaveNoSQLite checks the dependency graph of each Lambda
// binary as make build-lambda builds it (linux/arm64, no cgo, lambda.norpc):
// no SQLite driver and no database/sql may end up in a function.
func TestFunctionsHaveNoSQLite(t *testing.T) {
	t.Parallel()
	goBin := "go"
	forbidden := []string{"database/sql", "modernc.org/sqlite", "github.com/mattn/go-sqlite3", "github.com/xjobdev/xjob/internal/adapter/sqlitestore"}
	for _, fn := range awsconfig.Functions {
		t.Run(fn.Name, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(goBin, "list", "-deps", "-tags", "lambda.norpc", "../../../functions/"+fn.Name)
			cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH=arm64", "CGO_ENABLED=0")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("go list: %v\n%s", err, out)
			}
			for _, dep := range strings.Fields(string(out)) {
				for _, f := range forbidden {
					if dep == f || strings.HasPrefix(dep, f+"/") {
						t.Errorf("function %s depends on %s", fn.Name, dep)
					}
				}
			}
		})
	}
}
