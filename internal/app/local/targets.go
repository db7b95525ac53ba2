package local

import (
	"context"
	"fmt"
	"net"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"

	"github.com/xjobdev/xjob/internal/adapter/awstarget"
	"github.com/xjobdev/xjob/internal/adapter/httptarget"
	"github.com/xjobdev/xjob/internal/admin"
	"github.com/xjobdev/xjob/internal/egress"
	"github.com/xjobdev/xjob/internal/scheduler/callback"
	"github.com/xjobdev/xjob/internal/target"
)

// awsTargetsParam names the setting an unknown ARN's refusal points at.
const awsTargetsParam = "--aws-target-arns (XJOB_AWS_TARGET_ARNS)"

// newTargets builds the built-in executor of HTTP and AWS jobs and the
// admin's side of them. Secret headers are sealed with a key derived
// from the session key, or the admin token when none is set: the secret
// every node of a cluster already shares, and the one console sessions
// are signed with. HTTP calls obey the executors' egress rule, checked at
// save too. AWS jobs are enabled by the operator's list of ARNs, and call
// through the SDK's default credentials chain.
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
	cfg := httptarget.Config{Policy: policy, Sealer: sealer, Report: cb.Callback,
		Clock: n.clk, Logger: n.logger, Workers: n.cfg.FastWorkers + n.cfg.SlowWorkers}
	tc := &admin.TargetConfig{Sealer: sealer, CheckURL: func(ctx context.Context, rawURL string) error {
		return policy.Check(ctx, net.DefaultResolver, rawURL)
	}, AWSParam: awsTargetsParam}
	allow, err := target.ParseAllowList(n.cfg.AWSTargetARNs)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: --aws-target-arns: %w", n.name(), err)
	}
	if allow.Len() > 0 {
		// No credentials is not an error here: a call fails with the
		// SDK's message, in the run's log, where the operator looks.
		var awsCfg aws.Config
		if n.cfg.AWSConfig != nil {
			awsCfg = *n.cfg.AWSConfig
		} else if awsCfg, err = awsconfig.LoadDefaultConfig(context.Background()); err != nil {
			return nil, nil, fmt.Errorf("%s: AWS jobs: %w", n.name(), err)
		}
		cfg.AWS = awstarget.New(awstarget.Config{AWS: awsCfg, Endpoints: n.cfg.AWSEndpoints, Clock: n.clk})
		cfg.AWSAllow, tc.AWS = &allow, &allow
		n.logger.Info("AWS jobs enabled", "allowedARNs", allow.Len())
	}
	exec, err := httptarget.New(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: HTTP jobs: %w", n.name(), err)
	}
	tc.Try = exec.Try
	return exec, tc, nil
}
