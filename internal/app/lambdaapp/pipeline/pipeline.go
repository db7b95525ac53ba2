// Package pipeline builds the core services several Lambda functions
// share on a wiring.Base: the callback service (results, retries, child
// jobs), the registry service (heartbeats, the addresses of automatic
// groups), the upkeep service (lost results, change resume) and the executor
// client. Each constructor builds one service,
// so a function builds only what it runs (the dispatcher is package
// dispatchfn's, so that callback and registry do not link it).
package pipeline

import (
	"context"
	"fmt"
	"net"

	"github.com/xjobdev/xjob/internal/adapter/execclient"
	"github.com/xjobdev/xjob/internal/app/lambdaapp/wiring"
	"github.com/xjobdev/xjob/internal/scheduler/callback"
	"github.com/xjobdev/xjob/internal/scheduler/registry"
	"github.com/xjobdev/xjob/internal/scheduler/upkeep"
)

// Callback is the callback service: results recorded on the counted
// store, retries and child jobs sent to the lanes, alarms raised.
func Callback(b *wiring.Base) (*callback.Service, error) {
	cb, err := callback.New(callback.Config{Store: b.Counted, Queues: b.Queues, Alarmer: b.Alarmer,
		Clock: b.Clock, Logger: b.Log, Metrics: b.Metrics,
		Retry: callback.RetryPolicy{Delay: b.Config.RetryDelay, Backoff: b.Config.RetryBackoff}})
	if err != nil {
		return nil, fmt.Errorf("lambda %s: callback: %w", b.Config.Function, err)
	}
	return cb, nil
}

// Registry is the registry service (heartbeats, the addresses of
// automatic groups).
func Registry(b *wiring.Base) (*registry.Service, error) {
	// Registrations the executor client would refuse to dial are refused
	// (wiring.Config.Egress: link-local, metadata and loopback addresses,
	// the operator's ranges), so they never reach a group's address list.
	rule := b.Config.Egress
	reg, err := registry.New(registry.Config{Store: b.Store, Clock: b.Clock, Logger: b.Log,
		CheckAddress: func(ctx context.Context, address string) error {
			return rule.Check(ctx, net.DefaultResolver, address)
		}})
	if err != nil {
		return nil, fmt.Errorf("lambda %s: registry: %w", b.Config.Function, err)
	}
	return reg, nil
}

// Upkeep is the upkeep service of the maintenance: the lost-result check
// asks reg which executors are alive and completes through cb.
func Upkeep(b *wiring.Base, reg *registry.Service, cb *callback.Service) (*upkeep.Service, error) {
	u, err := upkeep.New(upkeep.Config{Store: b.Store, Liveness: reg, Completer: cb, Clock: b.Clock, Logger: b.Log, Metrics: b.Metrics})
	if err != nil {
		return nil, fmt.Errorf("lambda %s: upkeep: %w", b.Config.Function, err)
	}
	return u, nil
}

// Executors is the executor client, keeping idle keep-alive connections
// per executor for as many calls as one invocation makes at once. Every
// connection it dials obeys wiring.Config.Egress, checked on the IP
// actually dialled.
func Executors(b *wiring.Base, idle int) (*execclient.Client, error) {
	rule := b.Config.Egress
	exec, err := execclient.New(execclient.Options{AccessTokens: b.AccessTokens, HTTPClient: b.Deps.ExecutorHTTP,
		MaxIdleConnsPerHost: idle, Egress: &rule})
	if err != nil {
		return nil, fmt.Errorf("lambda %s: executor client: %w", b.Config.Function, err)
	}
	return exec, nil
}
