// Package registryfn is the registry Lambda function: an EventBridge
// rule runs xxl-job's background monitors every minute (callback sweep,
// group refresh, lost-job check, change resume). Trigger logs need no
// purge here: DynamoDB's TTL retires them (dynamostore, "Retention").
// Executors' heartbeats
// are the callback function's, behind the executor API's function URL;
// this function serves no HTTP, holds no secret and links nothing of the
// admin side.
package registryfn

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/aws/aws-lambda-go/events"

	"github.com/xjobdev/xjob/internal/app/lambdaapp/pipeline"
	"github.com/xjobdev/xjob/internal/app/lambdaapp/wiring"
	"github.com/xjobdev/xjob/internal/scheduler/callback"
	"github.com/xjobdev/xjob/internal/scheduler/registry"
	"github.com/xjobdev/xjob/internal/scheduler/upkeep"
)

// Function is the registry function.
type Function struct {
	b        *wiring.Base
	callback *callback.Service
	registry *registry.Service
	upkeep   *upkeep.Service
}

// New builds the registry function on b.
func New(b *wiring.Base) (*Function, error) {
	cb, err := pipeline.Callback(b)
	if err != nil {
		return nil, err
	}
	reg, err := pipeline.Registry(b)
	if err != nil {
		return nil, err
	}
	up, err := pipeline.Upkeep(b, reg, cb)
	if err != nil {
		return nil, err
	}
	return &Function{b: b, callback: cb, registry: reg, upkeep: up}, nil
}

// Build is New as a wiring.Builder: the registry main's whole wiring.
func Build(b *wiring.Base) (any, error) {
	f, err := New(b)
	if err != nil {
		return nil, err
	}
	return f.Handle, nil
}

// Handle runs the maintenance for an EventBridge scheduled event. Any
// other payload (an HTTP event of a route left pointing here) is refused
// with an error, never served.
func (f *Function) Handle(ctx context.Context, raw json.RawMessage) (any, error) {
	isHTTP, err := wiring.IsHTTPEvent(raw)
	if err != nil {
		return nil, fmt.Errorf("registry: %w", err)
	}
	var ev events.EventBridgeEvent
	if isHTTP || json.Unmarshal(raw, &ev) != nil || ev.DetailType == "" && ev.Source == "" {
		return nil, errors.New("registry: unrecognised payload: want an EventBridge scheduled event (heartbeats go to the callback function)")
	}
	return f.Maintain(ctx, ev)
}

// MaintenanceResult says what one maintenance run did.
type MaintenanceResult struct {
	Swept         int `json:"swept"`
	StaleRemoved  int `json:"staleRemoved"`
	GroupsUpdated int `json:"groupsUpdated"`
	LostChecked   int `json:"lostChecked"`
	LostMarked    int `json:"lostMarked"`
	// ChangesResumed: the resume of change sets ran (upkeep.ResumeChanges;
	// false when an apply held its lease).
	ChangesResumed bool `json:"changesResumed"`
}

// Maintain runs xxl-job's background monitors once, for the registry
// function's EventBridge rule (every minute): the callback sweep (xxl-job
// every 10 s), group refresh (30 s) and lost-job check (60 s) every run.
// xxl-job's daily log purge has no step: the store is a driver.LogExpirer
// whose items DynamoDB's TTL deletes free, where a purge would pay a write
// per page. Each step runs even when an earlier one failed; the errors are
// joined, so the invocation is reported failed.
func (f *Function) Maintain(ctx context.Context, _ events.EventBridgeEvent) (MaintenanceResult, error) {
	defer f.b.FlushReports(ctx)
	var res MaintenanceResult
	var errs []error
	n, err := f.callback.Sweep(ctx)
	res.Swept = n
	errs = append(errs, wrap("callback sweep", err))
	rr, err := f.registry.RefreshGroups(ctx)
	res.StaleRemoved, res.GroupsUpdated = rr.Removed, rr.Updated
	errs = append(errs, wrap("registry refresh", err))
	// An apply that died in the middle is finished (or undone) within a
	// minute, whether or not the web function starts again.
	res.ChangesResumed, err = f.upkeep.Resume(ctx)
	errs = append(errs, wrap("change resume", err))
	lr, err := f.upkeep.CheckLost(ctx)
	res.LostChecked, res.LostMarked = lr.Checked, lr.Marked
	errs = append(errs, wrap("lost-job check", err))
	f.b.EMF.Put(map[string]float64{wiring.MetricLost: float64(res.LostMarked)})
	f.b.Log.InfoContext(ctx, "maintenance", "result", res)
	return res, errors.Join(errs...)
}

func wrap(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", what, err)
}
