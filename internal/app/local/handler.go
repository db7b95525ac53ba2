package local

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/xjobdev/xjob/internal/admin"
	"github.com/xjobdev/xjob/internal/egress"
	"github.com/xjobdev/xjob/internal/metric"
	"github.com/xjobdev/xjob/internal/web/adminapi"
	"github.com/xjobdev/xjob/internal/web/auth"
	"github.com/xjobdev/xjob/internal/web/clientip"
	"github.com/xjobdev/xjob/internal/web/console"
)

// newAuth builds the sign-in service over the installation's users. The
// session key derives from sessionKey, or else from the admin token (see
// auth.DeriveKey): every node of a cluster signs alike.
func newAuth(svc *services, adminToken, sessionKey string, glue auth.GluePolicy) (*auth.Service, error) {
	secret := adminToken
	if sessionKey != "" {
		secret = sessionKey
	}
	a, err := auth.New(auth.Config{Users: svc.db, Store: svc.db, AdminToken: adminToken, Key: auth.DeriveKey(secret),
		Glue: glue, Clock: svc.clock})
	if err != nil {
		return nil, fmt.Errorf("local: auth: %w", err)
	}
	return a, nil
}

// gluePolicy is the GLUE policy in effect: the configured one, else
// admins only on a new installation, and xxl-job's behaviour (any user of
// the group) on one that already holds GLUE jobs — an installation imported
// from xxl-job, whose users expect to keep editing them. Either way the
// choice is logged at start.
func gluePolicy(ctx context.Context, cfg Config, svc *services, log *slog.Logger) (auth.GluePolicy, error) {
	if cfg.GluePolicy != "" {
		p, err := auth.ParseGluePolicy(cfg.GluePolicy)
		if err == nil {
			log.Info("GLUE policy: "+string(p)+" (configured)", "gluePolicy", p)
		}
		return p, err
	}
	p := admin.ListJobsParams{Limit: 1000}
	for {
		page, err := svc.admin.ListJobs(ctx, p)
		if err != nil {
			return "", fmt.Errorf("local: GLUE policy: %w", err)
		}
		for _, j := range page.Jobs {
			if j.GlueType.Script() {
				log.Warn("GLUE policy: everyone, as in xxl-job — this installation holds GLUE jobs (imported), so any user "+
					"of a job's group may create and edit GLUE jobs, which executors run as code; "+
					"set --glue-policy admins (XJOB_GLUE_POLICY) to limit that to admins", "gluePolicy", auth.GlueEveryone)
				return auth.GlueEveryone, nil
			}
		}
		if page.Next == "" {
			break
		}
		p.Cursor = page.Next
	}
	log.Info("GLUE policy: admins (only admins create and edit GLUE jobs; --glue-policy to change)", "gluePolicy", auth.GlueAdmins)
	return auth.GlueAdmins, nil
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
			RunsToday: metric.RunsTodayFrom(svc.reports, svc.clock.Now), Cluster: svc.cluster, Logger: svc.logger},
		AdminToken:  adminToken,
		Auth:        au,
		AccessToken: cfg.AccessToken,
		Logger:      svc.logger,
		Clock:       svc.clock,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("local: admin api: %w", err)
	}
	con, err := console.New(console.Config{Admin: svc.admin, Auth: au, Logger: svc.logger})
	if err != nil {
		return nil, nil, fmt.Errorf("local: console: %w", err)
	}
	trusted, _ := egress.ParsePrefixes(cfg.TrustedProxies) // checked by Validate
	return clientip.New(trusted).Wrap(console.Mount(h, con)), append(h.Routes(), con.Routes()...), nil
}
