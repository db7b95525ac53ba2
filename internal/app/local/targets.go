package local

import (
	"context"
	"fmt"
	"net"

	"github.com/xjobdev/xjob/internal/adapter/httptarget"
	"github.com/xjobdev/xjob/internal/admin"
	"github.com/xjobdev/xjob/internal/egress"
	"github.com/xjobdev/xjob/internal/scheduler/callback"
	"github.com/xjobdev/xjob/internal/target"
)

// newTargets builds the built-in executor of HTTP jobs and the admin's
// side of them. Secret headers are sealed with a key derived from the
// session key, or the admin token when none is set: the secret every node
// of a cluster already shares, and the one console sessions are signed
// with. Calls obey the executors' egress rule, checked at save too.
func newTargets(n node, policy egress.Policy, cb *callback.Service) (*httptarget.Executor, *admin.TargetConfig, error) {
	secret := n.cfg.SessionKey
	if secret == "" {
		secret = n.adminToken
	}
	sealer, err := target.NewSealer(secret)
	if err != nil {
		// Configured secrets are long enough (Validate); a shorter one
		// (an embedding program's) leaves HTTP jobs without secret headers.
		n.logger.Warn("HTTP jobs: no key for secret headers; jobs that have some are refused", "err", err)
		sealer = nil
	}
	exec, err := httptarget.New(httptarget.Config{Policy: policy, Sealer: sealer, Report: cb.Callback,
		Clock: n.clk, Logger: n.logger, Workers: n.cfg.FastWorkers + n.cfg.SlowWorkers})
	if err != nil {
		return nil, nil, fmt.Errorf("%s: HTTP jobs: %w", n.name(), err)
	}
	return exec, &admin.TargetConfig{Sealer: sealer, CheckURL: func(ctx context.Context, rawURL string) error {
		return policy.Check(ctx, net.DefaultResolver, rawURL)
	}}, nil
}
