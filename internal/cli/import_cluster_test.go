package cli

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/adapter/pgstore"
	"github.com/xjobdev/xjob/internal/adapter/sqlitestore"
	"github.com/xjobdev/xjob/internal/app/local"
	"github.com/xjobdev/xjob/internal/testenv/pgserver"
	"github.com/xjobdev/xjob/internal/xxlimport/xxltest"
	"github.com/xjobdev/xjob/pkg/adminclient"
	"github.com/xjobdev/xjob/pkg/driver"
)

// `xjob import xxl-job` goes through the admin API, so it writes to a
// cluster exactly as it writes to xjob local: the same xxl-job database
// imported into each (groups, jobs, GLUE versions, users, logs and
// report days) prints the same plan and leaves the same records,
// compared store against store.
func TestImportXxlJobIntoClusterMatchesLocal(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts MariaDB and PostgreSQL")
	}
	xxl := xxltest.Start(t)
	const name = "xxl_job_cluster"
	sqlDB := xxl.CreateDatabase(t, name, xxltest.SchemaFile("xxl-job-3.4.sql"))
	if _, err := sqlDB.Exec(xxlRows); err != nil {
		t.Fatalf("insert rows: %v", err)
	}
	pg := pgserver.Start(t)
	dbURL := pg.NewDatabase(t)
	const shards = 4

	localFile := filepath.Join(t.TempDir(), "xjob.db")
	lcfg := local.Defaults()
	lcfg.DB, lcfg.Shards = localFile, shards
	loc, stopLocal := startHost(t, lcfg, local.Run)
	scfg := local.ServerDefaults()
	scfg.DB, scfg.Shards, scfg.NodeID = dbURL, shards, "import-node"
	scfg.AdminToken, scfg.AccessToken = "import-admin-token-0123456789", "import-access-token-0123456789"
	srv, stopServer := startHost(t, scfg, local.RunServer)

	args := []string{"import", "xxl-job", "--mysql", xxl.DSN(name), "--tz", "Asia/Shanghai", "--keep-status", "--logs", "2024-01-01"}
	outLocal := mustRun(t, loc, args...)
	outServer := mustRun(t, srv, args...)
	if outLocal != outServer {
		t.Fatalf("the import printed differently\nxjob local:\n%s\nxjob server:\n%s", outLocal, outServer)
	}

	// The users carried over sign in on both, with their xxl-job password
	// (which re-hashes it: read the users after).
	for _, h := range []*localServer{loc, srv} {
		if !signsIn(t, h.info.URL, "annie", "123456") {
			t.Errorf("%s: the imported user annie does not sign in", h.info.URL)
		}
	}
	// Stopped, both have written what they hold in memory (the report's
	// counters are batched).
	stopLocal()
	stopServer()

	ctx := t.Context()
	ldb, err := sqlitestore.Open(ctx, localFile, sqlitestore.Options{Shards: shards})
	if err != nil {
		t.Fatal(err)
	}
	defer ldb.Close()
	sdb, err := pgstore.Open(ctx, dbURL, pgstore.Options{Shards: shards, MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer sdb.Close()
	read := func(what string, f func(s driver.Store) (any, error)) {
		t.Helper()
		a, err := f(ldb)
		if err != nil {
			t.Fatalf("xjob local %s: %v", what, err)
		}
		b, err := f(sdb)
		if err != nil {
			t.Fatalf("xjob server %s: %v", what, err)
		}
		if reflect.ValueOf(a).Len() == 0 {
			t.Errorf("%s: none imported", what)
		}
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s differ:\n xjob local  %+v\n xjob server %+v", what, a, b)
		}
	}
	read("groups", func(s driver.Store) (any, error) {
		gs, err := s.GroupList(ctx, driver.GroupListParams{})
		for i := range gs {
			gs[i].UpdatedAt = 0 // the instant of the import
		}
		return gs, err
	})
	var jobIDs []int64
	read("jobs", func(s driver.Store) (any, error) {
		p, err := s.JobList(ctx, driver.JobListParams{Limit: 100})
		jobIDs = jobIDs[:0]
		for i := range p.Jobs {
			j := &p.Jobs[i]
			jobIDs = append(jobIDs, j.ID)
			// The instants of the import and of the scan that followed.
			j.CreatedAt, j.UpdatedAt, j.GlueUpdatedAt, j.TriggerLastTime, j.TriggerNextTime = 0, 0, 0, 0, 0
			j.Version = 0 // the scan's advances
		}
		return p.Jobs, err
	})
	for _, id := range jobIDs {
		read("GLUE versions of a job", func(s driver.Store) (any, error) {
			vs, err := s.GlueVersionList(ctx, id, 100)
			for i := range vs {
				vs[i].CreatedAt = 0
			}
			if len(vs) == 0 {
				return []int{0}, err // a job without versions: equal, and not "none imported"
			}
			return vs, err
		})
	}
	read("users", func(s driver.Store) (any, error) {
		us, err := s.UserList(ctx, driver.UserListParams{})
		// admin is each host's own first user (xxl-job's is skipped as
		// already here); the others come from xxl-job.
		us = slices.DeleteFunc(us, func(u xjob.User) bool { return u.Username == "admin" })
		for i := range us {
			// The sign-in re-hashed the xxl-job hash, with a salt of its own.
			if strings.HasPrefix(us[i].PasswordHash, "$argon2id$") {
				us[i].PasswordHash = "argon2id"
			}
			us[i].CreatedAt, us[i].UpdatedAt, us[i].Version = 0, 0, 0
		}
		return us, err
	})
	read("imported logs", func(s driver.Store) (any, error) {
		p, err := s.LogList(ctx, driver.LogListParams{To: time.Date(2024, 12, 31, 0, 0, 0, 0, time.UTC).UnixMilli(), Limit: 100})
		return p.Logs, err
	})
	read("report days", func(s driver.Store) (any, error) {
		return s.ReportList(ctx, driver.ReportListParams{From: "2024-01-01", To: "2024-12-31"})
	})

}

// startHost runs xjob local or one xjob server node with cfg until stop
// is called or the test ends.
func startHost(t *testing.T, cfg local.Config, run func(context.Context, local.Config) error) (h *localServer, stop func()) {
	t.Helper()
	cfg.Listen, cfg.Grace = "127.0.0.1:0", 5*time.Second
	cfg.Logger = slog.New(slog.DiscardHandler)
	ready := make(chan local.Info, 1)
	cfg.Ready = func(i local.Info) { ready <- i }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, cfg) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("%s: %v", cfg.DB, err)
			}
		})
	}
	t.Cleanup(stop)
	select {
	case info := <-ready:
		api, err := adminclient.New(info.URL, info.AdminToken)
		if err != nil {
			t.Fatal(err)
		}
		return &localServer{info: info, api: api}, stop
	case err := <-done:
		t.Fatalf("start: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("did not become ready")
	}
	return nil, nil
}

// signsIn posts the console's sign-in form and reports whether it set a
// session cookie.
func signsIn(t *testing.T, base, user, password string) bool {
	t.Helper()
	c := &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := c.PostForm(base+"/console/login", url.Values{"username": {user}, "password": {password}})
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, res.Body)
	return slices.ContainsFunc(res.Cookies(), func(c *http.Cookie) bool { return c.Name == "xjob_session" && c.Value != "" })
}
