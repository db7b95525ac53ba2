package executor

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/pkg/protocol"
)

// adminClient posts to the scheduling centers the way XxlJobRemotingUtil
// does: JSON body, the token header only when a token is set, each admin in
// order until one answers HTTP 200 with code 200.
type adminClient struct {
	addrs   []string
	token   string
	client  *http.Client
	timeout time.Duration
}

var errNoAdmin = errors.New("no admin address configured")

// post sends body to path on each admin in order and returns nil at the
// first success, or every admin's error joined.
func (a *adminClient) post(ctx context.Context, path string, body any) error {
	if len(a.addrs) == 0 {
		return fmt.Errorf("admin %s: %w", path, errNoAdmin)
	}
	payload, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("admin %s: encode: %w", path, err)
	}
	var errs []error
	for _, addr := range a.addrs {
		err := a.postOne(ctx, addr+path, payload)
		if err == nil {
			return nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return fmt.Errorf("admin %s: %w", path, errors.Join(errs...))
}

func (a *adminClient) postOne(ctx context.Context, url string, payload []byte) error {
	ctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(payload))
	if err != nil {
		return fmt.Errorf("%s: %w", url, err)
	}
	req.Header.Set("Content-Type", "application/json;charset=UTF-8")
	req.Header.Set("Accept-Charset", "application/json;charset=UTF-8")
	if a.token != "" {
		req.Header.Set(protocol.AccessTokenHeader, a.token)
	}
	resp, err := a.client.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w", url, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, MaxBodyBytes))
	if err != nil {
		return fmt.Errorf("%s: read reply: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: http status %d", url, resp.StatusCode)
	}
	var rt protocol.ReturnT
	if err := json.Unmarshal(raw, &rt); err != nil {
		return fmt.Errorf("%s: decode reply: %w", url, err)
	}
	if rt.Code != protocol.SuccessCode {
		return fmt.Errorf("%s: code %d: %s", url, rt.Code, rt.Msg)
	}
	return nil
}

// registryParam is what this executor registers.
func (e *Executor) registryParam() protocol.RegistryParam {
	return protocol.RegistryParam{
		RegistryGroup: xjob.RegistryGroupExecutor,
		RegistryKey:   e.cfg.AppName,
		RegistryValue: e.address(),
	}
}

// heartbeat registers at once, then every BeatInterval, until ctx ends.
// A failed beat is logged and retried at the next tick, like xxl-job.
// After each beat, until an admin has answered them, the handlers' job
// declarations are sent (declareJobs).
func (e *Executor) heartbeat(ctx context.Context) {
	declared := false
	for {
		if err := e.admin.post(ctx, protocol.PathRegistry, e.registryParam()); err != nil && ctx.Err() == nil {
			e.log.Warn("executor registry beat failed", "err", err)
		}
		if !declared {
			declared = e.declareJobs(ctx)
		}
		if err := e.clock.SleepUntil(ctx, e.clock.Now().Add(e.cfg.BeatInterval)); err != nil {
			return
		}
	}
}

// PathDeclare is xjob's endpoint for job declarations (see WithJob). It is
// not part of xxl-job's protocol: an xxl-job admin answers 404.
const PathDeclare = "api/xjob/declare"

// declarations lists the handlers' declared jobs in handler-name order.
func (e *Executor) declarations() []xjob.JobDeclaration {
	e.hmu.RLock()
	defer e.hmu.RUnlock()
	var out []xjob.JobDeclaration
	for _, h := range e.handlers {
		if h.decl != nil {
			out = append(out, *h.decl)
		}
	}
	slices.SortFunc(out, func(a, b xjob.JobDeclaration) int { return cmp.Compare(a.Handler, b.Handler) })
	return out
}

// declareJobs sends the declarations to the admins in order and reports
// whether the matter is settled: an admin answered them, refused them for
// good (a 4xx other than 409: logged, not retried), or does not know the
// endpoint (an xxl-job admin: 404, or its "uri-mapping not found" reply).
// A 409 (no group of this app name yet), a 5xx or an unreachable admin is
// retried after the next beat.
func (e *Executor) declareJobs(ctx context.Context) bool {
	decls := e.declarations()
	if len(decls) == 0 {
		return true
	}
	payload, err := json.Marshal(xjob.DeclareRequest{AppName: e.cfg.AppName, Jobs: decls})
	if err != nil {
		e.log.Error("executor job declarations not encoded", "err", err)
		return true
	}
	var errs []error
	for _, addr := range e.admin.addrs {
		status, rt, err := e.admin.postRaw(ctx, addr+PathDeclare, payload)
		switch {
		case err != nil:
			errs = append(errs, err)
			continue
		case status == http.StatusNotFound || (status == http.StatusOK && rt.Code != protocol.SuccessCode):
			e.log.Info("executor job declarations: the admin does not support them (xxl-job admin?); create the jobs there",
				"admin", addr, "status", status, "msg", rt.Msg)
			return true
		case status == http.StatusOK:
			var res xjob.DeclareResult
			if err := json.Unmarshal(rt.Content, &res); err != nil {
				e.log.Warn("executor job declarations: reply not understood", "admin", addr, "err", err)
				return true
			}
			for _, j := range res.Jobs {
				lv := slog.LevelInfo
				if len(j.Differs) == 0 && j.Outcome == xjob.DeclareUnchanged {
					lv = slog.LevelDebug
				}
				e.log.Log(ctx, lv, "executor declared job", "key", j.Key, "job", j.ID, "outcome", j.Outcome,
					"differs", strings.Join(j.Differs, ","))
			}
			return true
		case status == http.StatusConflict || status >= 500:
			errs = append(errs, fmt.Errorf("%s: http status %d: %s", addr+PathDeclare, status, rt.Msg))
			continue
		default:
			e.log.Error("executor job declarations refused; fix them and restart", "admin", addr,
				"status", status, "msg", rt.Msg, "problems", string(rt.Content))
			return true
		}
	}
	if ctx.Err() == nil {
		e.log.Warn("executor job declarations not accepted yet; retrying after the next beat", "err", errors.Join(errs...))
	}
	return false
}

// postRaw posts payload to url and returns the HTTP status and the
// ReturnT of the reply (zero when the body is not one); err only when no
// reply came.
func (a *adminClient) postRaw(ctx context.Context, url string, payload []byte) (int, protocol.ReturnT, error) {
	ctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(payload))
	if err != nil {
		return 0, protocol.ReturnT{}, fmt.Errorf("%s: %w", url, err)
	}
	req.Header.Set("Content-Type", "application/json")
	if a.token != "" {
		req.Header.Set(protocol.AccessTokenHeader, a.token)
	}
	resp, err := a.client.Do(req)
	if err != nil {
		return 0, protocol.ReturnT{}, fmt.Errorf("%s: %w", url, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, MaxBodyBytes))
	if err != nil {
		return 0, protocol.ReturnT{}, fmt.Errorf("%s: read reply: %w", url, err)
	}
	var rt protocol.ReturnT
	_ = json.Unmarshal(raw, &rt) // a 404 page is not a ReturnT
	return resp.StatusCode, rt, nil
}
