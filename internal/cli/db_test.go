package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/adapter/sqlitestore"
	"github.com/xjobdev/xjob/internal/testenv/pgserver"
	"github.com/xjobdev/xjob/pkg/clock"
)

// runDB runs the CLI with vars as its environment.
func runDB(vars map[string]string, args ...string) result {
	var out, errb bytes.Buffer
	code := run(context.Background(), args, env{
		stdin: strings.NewReader(""), stdout: &out, stderr: &errb,
		getenv: func(k string) string { return vars[k] },
		clock:  clock.NewFake(time.UnixMilli(1_767_225_600_000)), loc: time.UTC,
	})
	return result{code, out.String(), errb.String()}
}

// localFile writes an installation of one group, with the state file
// xjob local keeps beside it.
func localFile(t *testing.T) string {
	file := filepath.Join(t.TempDir(), "xjob.db")
	db, err := sqlitestore.Open(t.Context(), file, sqlitestore.Options{Shards: 4})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.GroupInsert(t.Context(), xjob.Group{AppName: "cli-copy", Title: "CLI", AddressType: xjob.AddressAuto}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file+".state.json", []byte(`{"owner":"local-cli","shards":4,"createdAt":1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// Bad usage is exit code 2; a copy that cannot run is exit code 1 with
// one line that never shows the URL's password.
func TestDBCopyRefusals(t *testing.T) {
	t.Parallel()
	file := localFile(t)
	for _, tc := range []struct {
		name string
		vars map[string]string
		args []string
		code int
		want string
	}{
		{"no target", nil, []string{"db", "copy", "--from", file}, exitUsage, "XJOB_DB"},
		{"bad page size", nil, []string{"db", "copy", "--from", file, "--to", "postgres://h/db", "--page-size", "0"}, exitUsage, "--page-size"},
		{"no such file", nil, []string{"db", "copy", "--from", file + ".missing", "--to", "postgres://u:s3cret-pw@h/db"}, exitFailed, "no SQLite file"},
		{"other scheme", map[string]string{envDB: "http://u:s3cret-pw@h/db"}, []string{"db", "copy", "--from", file}, exitFailed, "not postgres"},
		{"other shard count", nil, []string{"db", "copy", "--from", file, "--to", "postgres://u:s3cret-pw@h/db", "--shards", "8"}, exitFailed, "created with 4 shards"},
		{"unreachable", nil, []string{"db", "copy", "--from", file, "--to", "postgres://u:s3cret-pw@127.0.0.1:1/db?connect_timeout=2"}, exitFailed, "--to postgres://u:xxxxx@127.0.0.1:1/db"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runDB(tc.vars, tc.args...)
			if r.code != tc.code || !strings.Contains(r.errOut, tc.want) {
				t.Fatalf("exit %d, stderr %q; want exit %d and %q", r.code, r.errOut, tc.code, tc.want)
			}
			if strings.Contains(r.errOut+r.out, "s3cret-pw") {
				t.Fatalf("the output shows the password: %q", r.errOut)
			}
			if tc.code == exitFailed && strings.Count(strings.TrimSpace(r.errOut), "\n") != 0 {
				t.Fatalf("a failed copy says more than one line: %q", r.errOut)
			}
		})
	}
}

// The command copies into an empty database given in XJOB_DB, prints its
// counts as JSON under -o json, and refuses the same database next time.
func TestDBCopyToPostgres(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts PostgreSQL")
	}
	srv := pgserver.Start(t)
	vars := map[string]string{envDB: srv.NewDatabase(t)}
	file := localFile(t)
	r := runDB(vars, "db", "copy", "--from", file, "-o", "json")
	if r.code != exitOK {
		t.Fatalf("copy: exit %d\n%s", r.code, r.errOut)
	}
	var sum struct{ Groups, Shards int }
	if err := json.Unmarshal([]byte(r.out), &sum); err != nil || sum.Groups != 1 || sum.Shards != 4 {
		t.Fatalf("summary %q (%v), want 1 group and 4 shards", r.out, err)
	}
	r = runDB(vars, "db", "copy", "--from", file)
	if r.code != exitFailed || !strings.Contains(r.errOut, "not empty (it holds 1 group)") || strings.Contains(r.errOut, srv.Password) {
		t.Fatalf("second copy: exit %d, stderr %q; want exit 1 and the refusal", r.code, r.errOut)
	}
}
