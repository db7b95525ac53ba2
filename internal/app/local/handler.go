package local

import (
	"fmt"
	"net/http"

	"github.com/xjobdev/xjob/clock"
	"github.com/xjobdev/xjob/internal/metric"
	"github.com/xjobdev/xjob/internal/web/adminapi"
	"github.com/xjobdev/xjob/internal/web/auth"
	"github.com/xjobdev/xjob/internal/web/console"
)

// newAuth builds the sign-in service over the installation's users. The
// session key derives from the admin token (see auth.DeriveKey).
func newAuth(svc *services, adminToken string) (*auth.Service, error) {
	a, err := auth.New(auth.Config{Users: svc.db, Store: svc.db, AdminToken: adminToken, Key: auth.DeriveKey(adminToken),
		Clock: clock.Real{}})
	if err != nil {
		return nil, fmt.Errorf("local: auth: %w", err)
	}
	return a, nil
}

// newHandler builds the one HTTP handler: the xxl-job executor API
// (/api/…, also under /xxl-job-admin), the xjob admin API (/v1/…) and
// /healthz, all served by package adminapi, and the web console under
// /console/ (package console). routes lists every route of both, for
// tests that walk them.
func newHandler(cfg Config, svc *services, adminToken string, au *auth.Service) (_ http.Handler, routes []string, _ error) {
	h, err := adminapi.New(adminapi.Config{
		Admin:    svc.admin,
		Registry: svc.registry,
		Callback: svc.callback,
		Metrics:  svc.metrics,
		Gauges: metric.Gauges{LaneDepth: svc.db.QueueDepths, ExecutorsOnline: svc.registry.OnlineCounts,
			RunsToday: metric.RunsTodayFrom(svc.reports, clock.Real{}.Now), Logger: svc.logger},
		AdminToken:  adminToken,
		Auth:        au,
		AccessToken: cfg.AccessToken,
		Logger:      svc.logger,
		Clock:       clock.Real{},
	})
	if err != nil {
		return nil, nil, fmt.Errorf("local: admin api: %w", err)
	}
	con, err := console.New(console.Config{Admin: svc.admin, Auth: au, Logger: svc.logger})
	if err != nil {
		return nil, nil, fmt.Errorf("local: console: %w", err)
	}
	return console.Mount(h, con), append(h.Routes(), con.Routes()...), nil
}
