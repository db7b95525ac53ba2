package adminclient

import (
	"context"
	"net/http"
	"net/url"

	"github.com/xjobdev/xjob"
)

// ApplyParams are the options of Apply.
type ApplyParams struct {
	// Prune deletes the groups and jobs the manifest does not declare.
	Prune bool
	// DryRun returns the plan without writing anything.
	DryRun bool
	// Overwrite takes the manifest's value of every field, even one a
	// person changed in xjob since the last apply.
	Overwrite bool
	// KeepStarted leaves started out of Overwrite and keeps xjob's
	// state of a job with no record of an earlier apply (an import: it
	// never stops a job started in xjob).
	KeepStarted bool
	// Origin names the manifest's source (an import's database); jobs
	// recorded from another origin are not updated.
	Origin string
}

// Apply makes the server's groups and jobs match m (POST /v1/apply) and
// returns the plan, each item marked done. A manifest with any problem is
// a 400 *APIError listing them, and nothing is written.
func (c *Client) Apply(ctx context.Context, m xjob.Manifest, p ApplyParams) (xjob.ApplyResult, error) {
	q := url.Values{}
	if p.Prune {
		q.Set("prune", "true")
	}
	if p.DryRun {
		q.Set("dryRun", "true")
	}
	if p.Overwrite {
		q.Set("overwrite", "true")
	}
	if p.KeepStarted {
		q.Set("keepStarted", "true")
	}
	if p.Origin != "" {
		q.Set("origin", p.Origin)
	}
	var out xjob.ApplyResult
	err := c.do(ctx, http.MethodPost, "/v1/apply", q, m, &out)
	return out, err
}

// Export returns every group and job as a manifest (GET /v1/export).
func (c *Client) Export(ctx context.Context) (xjob.Manifest, error) {
	var out xjob.Manifest
	err := c.do(ctx, http.MethodGet, "/v1/export", nil, nil, &out)
	return out, err
}

// Bulk job actions.
const (
	BulkStart  = "start"
	BulkStop   = "stop"
	BulkDelete = "delete"
)

// BulkResult is one job's outcome of a bulk action: Status is the HTTP
// status the single-job request would have had (200 when it worked).
type BulkResult struct {
	ID     int64  `json:"id"`
	Status int    `json:"status"`
	Error  string `json:"error,omitempty"`
}

// JobBulk starts, stops or deletes many jobs in one request (POST
// /v1/bulk/jobs); each is done independently and has its own result.
func (c *Client) JobBulk(ctx context.Context, action string, ids []int64) ([]BulkResult, error) {
	var out struct {
		Items []BulkResult `json:"items"`
	}
	err := c.do(ctx, http.MethodPost, "/v1/bulk/jobs", nil, map[string]any{"action": action, "ids": ids}, &out)
	return out.Items, err
}
