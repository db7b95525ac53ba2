package lambdaapp_test

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/xjobdev/xjob/internal/adapter/awsconfig"
)

// TestFunctionsLinkOnlyWhatTheyRun checks the dependency graph of each
// Lambda binary as make build-lambda builds it (linux/arm64, no cgo,
// lambda.norpc): no function links SQLite or database/sql; only web links
// the human-facing side (console, sessions and password hashing, HTML
// templates, the admin API and service); only ring, dispatch and web link
// the built-in executor of target jobs and its SDK clients; the scan links no dispatcher and,
// like the registry (maintenance only), having no secrets, no SSM client;
// no main links package lambdaapp, which builds every function.
func TestFunctionsLinkOnlyWhatTheyRun(t *testing.T) {
	t.Parallel()
	const mod = "github.com/xjobdev/xjob/"
	everywhere := []string{"database/sql", "modernc.org/sqlite", "github.com/mattn/go-sqlite3", mod + "internal/adapter/sqlitestore",
		mod + "internal/app/local", mod + "internal/app/lambdaapp$"}
	humanFacing := []string{mod + "internal/web/console", mod + "internal/web/auth", mod + "internal/web/adminapi",
		mod + "internal/admin", "golang.org/x/crypto/argon2", "html/template"}
	// The built-in executor of HTTP and AWS jobs and the targets' SDK
	// clients: only the functions that fire targets (ring, dispatch) or
	// make their test call (web) link them. (Every function links the
	// Lambda client: the dispatch lanes are invocations, lambdaqueue.)
	targets := []string{mod + "internal/adapter/httptarget", mod + "internal/adapter/awstarget", mod + "internal/app/lambdaapp/targets",
		"github.com/aws/aws-sdk-go-v2/service/sfn", "github.com/aws/aws-sdk-go-v2/service/eventbridge"}
	forbidden := map[string][]string{
		"scan": slices.Concat(everywhere, humanFacing, targets, []string{mod + "internal/scheduler/dispatch", mod + "internal/adapter/execclient",
			mod + "internal/scheduler/ring", "github.com/aws/aws-sdk-go-v2/service/ssm"}),
		"ring":     slices.Concat(everywhere, humanFacing, []string{mod + "internal/scheduler/scan"}),
		"dispatch": slices.Concat(everywhere, humanFacing, []string{mod + "internal/scheduler/ring"}),
		"callback": slices.Concat(everywhere, humanFacing, targets, []string{mod + "internal/scheduler/dispatch", mod + "internal/scheduler/ring"}),
		"registry": slices.Concat(everywhere, humanFacing, targets, []string{mod + "internal/scheduler/dispatch", mod + "internal/scheduler/ring",
			mod + "internal/web/executorapi", "github.com/aws/aws-sdk-go-v2/service/ssm"}),
		"web": everywhere,
	}
	for _, fn := range awsconfig.Functions {
		t.Run(fn.Name, func(t *testing.T) {
			t.Parallel()
			bad, ok := forbidden[fn.Name]
			if !ok {
				t.Fatalf("no dependency rule for function %s", fn.Name)
			}
			cmd := exec.Command("go", "list", "-deps", "-tags", "lambda.norpc", "../../../functions/"+fn.Name)
			cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH=arm64", "CGO_ENABLED=0")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("go list: %v\n%s", err, out)
			}
			for _, dep := range strings.Fields(string(out)) {
				for _, f := range bad {
					exact, whole := strings.CutSuffix(f, "$") // "$": the package itself, not the ones under it
					if dep == exact || !whole && strings.HasPrefix(dep, f+"/") {
						t.Errorf("function %s links %s", fn.Name, dep)
					}
				}
			}
		})
	}
}
