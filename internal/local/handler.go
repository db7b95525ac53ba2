package local

import (
	"fmt"
	"net/http"

	"github.com/xjobdev/xjob/pkg/adminapi"
	"github.com/xjobdev/xjob/pkg/clock"
)

// newHandler builds the one HTTP handler: the xxl-job executor API
// (/api/…, also under /xxl-job-admin), the xjob admin API (/v1/…) and
// /healthz, all served by package adminapi.
func newHandler(cfg Config, svc *services, adminToken string) (http.Handler, error) {
	h, err := adminapi.New(adminapi.Config{
		Admin:       svc.admin,
		Registry:    svc.registry,
		Callback:    svc.callback,
		Metrics:     svc.metrics,
		AdminToken:  adminToken,
		AccessToken: cfg.AccessToken,
		Logger:      svc.logger,
		Clock:       clock.Real{},
	})
	if err != nil {
		return nil, fmt.Errorf("local: admin api: %w", err)
	}
	return h, nil
}
