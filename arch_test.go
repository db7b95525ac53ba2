package xjob_test

import (
	"os/exec"
	"strings"
	"testing"
)

// corePackages must stay free of storage and cloud SDKs: they reach the
// world only through the ports in driver.
var corePackages = []string{
	".", "./clock", "./driver", "./protocol", "./internal/scheduler/schedule",
	"./internal/scheduler/lease", "./internal/scheduler/scan", "./internal/scheduler/ring", "./internal/scheduler/dispatch", "./internal/scheduler/callback",
	"./internal/scheduler/registry", "./internal/scheduler/route", "./internal/adapter/execclient", "./internal/scheduler/alarm", "./internal/metric",
	"./executor", "./internal/scheduler/tally",
}

var forbiddenImports = []string{
	"github.com/aws/aws-sdk-go-v2",
	"github.com/aws/aws-lambda-go",
	"database/sql",
	"modernc.org/sqlite",
	"github.com/mattn/go-sqlite3",
}

func TestCorePackagesImportNoBackend(t *testing.T) {
	t.Parallel()
	for _, pkg := range corePackages {
		out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list %s: %v\n%s", pkg, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			for _, bad := range forbiddenImports {
				if dep == bad || strings.HasPrefix(dep, bad+"/") {
					t.Errorf("core package %s depends on %s", pkg, dep)
				}
			}
		}
	}
}
