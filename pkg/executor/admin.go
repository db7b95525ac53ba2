package executor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
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
func (e *Executor) heartbeat(ctx context.Context) {
	for {
		if err := e.admin.post(ctx, protocol.PathRegistry, e.registryParam()); err != nil && ctx.Err() == nil {
			e.log.Warn("executor registry beat failed", "err", err)
		}
		if err := e.clock.SleepUntil(ctx, e.clock.Now().Add(e.cfg.BeatInterval)); err != nil {
			return
		}
	}
}
