package alarm

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/xjobdev/xjob/internal/fallback"
	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/driver"
)

// Webhook wire constants. They are part of the payload contract: receivers
// rely on them, so they only ever grow.
const (
	// EventJobFailed is the payload's event (and the EventHeader value).
	EventJobFailed = "job.failed"
	// PayloadVersion is the payload's schema version.
	PayloadVersion = 1
	// EventHeader names the event of a webhook request.
	EventHeader = "X-Xjob-Event"
	// SignatureHeader carries "sha256=" + hex(HMAC-SHA256(secret, body))
	// when a secret is configured (the scheme GitHub webhooks use).
	SignatureHeader = "X-Xjob-Signature-256"
	// DefaultWebhookTimeout bounds one delivery, connection included.
	DefaultWebhookTimeout = 5 * time.Second
)

// Payload is the JSON body a Webhook POSTs. Field names are stable; new
// fields may be added, none renamed or removed without a new Version.
// Instants are Unix milliseconds, UTC. Example:
//
//	{"version":1,"event":"job.failed","sentAt":1772366400000,
//	 "job":{"id":7,"groupId":2,"description":"nightly report","author":"ops",
//	        "alarmEmails":["a@example.com"],"handler":"reportHandler"},
//	 "log":{"id":99,"triggerType":"CRON","scheduledTime":1772366395000,
//	        "triggerTime":1772366395004,"triggerCode":200,"triggerMsg":"…",
//	        "handleTime":1772366399000,"handleCode":500,"handleMsg":"boom",
//	        "executorAddress":"http://10.0.0.5:9999/","executorParam":"",
//	        "shardingParam":"","failRetryCount":0}}
//
// With a secret configured, the X-Xjob-Signature-256 header carries
// "sha256=" + hex(HMAC-SHA256(secret, raw body)); see Sign.
type Payload struct {
	Version int        `json:"version"`
	Event   string     `json:"event"`
	SentAt  int64      `json:"sentAt"`
	Job     PayloadJob `json:"job"`
	Log     PayloadLog `json:"log"`
}

// PayloadJob is the failed job as the payload describes it.
type PayloadJob struct {
	ID          int64    `json:"id"`
	GroupID     int64    `json:"groupId"`
	Description string   `json:"description"`
	Author      string   `json:"author"`
	AlarmEmails []string `json:"alarmEmails"`
	Handler     string   `json:"handler"`
}

// PayloadLog is the failed trigger log as the payload describes it.
type PayloadLog struct {
	ID              int64  `json:"id"`
	TriggerType     string `json:"triggerType"`
	ScheduledTime   int64  `json:"scheduledTime"`
	TriggerTime     int64  `json:"triggerTime"`
	TriggerCode     int    `json:"triggerCode"`
	TriggerMsg      string `json:"triggerMsg"`
	HandleTime      int64  `json:"handleTime"`
	HandleCode      int    `json:"handleCode"`
	HandleMsg       string `json:"handleMsg"`
	ExecutorAddress string `json:"executorAddress"`
	ExecutorParam   string `json:"executorParam"`
	ShardingParam   string `json:"shardingParam"`
	FailRetryCount  int    `json:"failRetryCount"`
}

// NewPayload builds the payload for an alarm sent at sentAt (Unix ms).
func NewPayload(a driver.Alarm, sentAt int64) Payload {
	emails := []string{}
	for _, e := range strings.Split(a.Job.AlarmEmail, ",") {
		if e = strings.TrimSpace(e); e != "" {
			emails = append(emails, e)
		}
	}
	return Payload{
		Version: PayloadVersion,
		Event:   EventJobFailed,
		SentAt:  sentAt,
		Job: PayloadJob{
			ID:          a.Job.ID,
			GroupID:     a.Job.GroupID,
			Description: a.Job.Description,
			Author:      a.Job.Author,
			AlarmEmails: emails,
			Handler:     a.Job.Handler,
		},
		Log: PayloadLog{
			ID:              a.Log.ID,
			TriggerType:     string(a.Log.TriggerType),
			ScheduledTime:   a.Log.ScheduledTime,
			TriggerTime:     a.Log.TriggerTime,
			TriggerCode:     a.Log.TriggerCode,
			TriggerMsg:      a.Log.TriggerMsg,
			HandleTime:      a.Log.HandleTime,
			HandleCode:      a.Log.HandleCode,
			HandleMsg:       a.Log.HandleMsg,
			ExecutorAddress: a.Log.ExecutorAddress,
			ExecutorParam:   a.Log.ExecutorParam,
			ShardingParam:   a.Log.ExecutorShardingParam,
			FailRetryCount:  a.Log.ExecutorFailRetryCount,
		},
	}
}

// Sign returns the SignatureHeader value for body under secret, for
// receivers to compare (with hmac.Equal) against the header they got.
func Sign(secret, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// WebhookConfig configures a Webhook.
type WebhookConfig struct {
	// URL is the http(s) endpoint to POST to. Required.
	URL string
	// Timeout bounds one delivery (default DefaultWebhookTimeout).
	Timeout time.Duration
	// Headers are added to every request (e.g. Authorization).
	Headers map[string]string
	// Secret, when set, signs each body into SignatureHeader so the
	// receiver can check the alarm came from this scheduler.
	Secret string
	// Client defaults to a fresh http.Client. It is copied and its
	// CheckRedirect replaced: a redirect is never followed, since that
	// would re-send the signature, the headers and the payload to
	// wherever the Location points.
	Client *http.Client
	// Clock stamps SentAt (default wall clock).
	Clock clock.Clock
}

// Webhook POSTs each alarm as a JSON Payload. A reply other than 2xx, or no
// reply within the timeout, is an error (the log's alarm status becomes 3).
// It does not retry: the alarm is a notification, and a retry loop inside
// the completion path would hold up retries of the job itself.
type Webhook struct {
	cfg    WebhookConfig
	target string // URL without credentials, for error messages
}

var _ driver.Alarmer = (*Webhook)(nil)

// NewWebhook validates cfg and returns a Webhook.
func NewWebhook(cfg WebhookConfig) (*Webhook, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errors.New("webhook alarm: URL must be an absolute http(s) URL")
	}
	if cfg.Timeout < 0 {
		return nil, errors.New("webhook alarm: Timeout must not be negative")
	}
	for k := range cfg.Headers {
		if k == "" || strings.ContainsAny(k, " :\r\n") {
			return nil, fmt.Errorf("webhook alarm: invalid header name %q", k)
		}
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultWebhookTimeout
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{}
	} else {
		copied := *cfg.Client
		cfg.Client = &copied
	}
	cfg.Client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	cfg.Clock = fallback.Clock(cfg.Clock)
	return &Webhook{cfg: cfg, target: u.Scheme + "://" + u.Host + u.Path}, nil
}

// Alarm POSTs the alarm's payload and waits for a 2xx reply.
func (w *Webhook) Alarm(ctx context.Context, a driver.Alarm) error {
	body, err := json.Marshal(NewPayload(a, clock.Millis(w.cfg.Clock)))
	if err != nil {
		return fmt.Errorf("webhook alarm encode: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, w.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("webhook alarm request: %w", err)
	}
	for k, v := range w.cfg.Headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "xjob-alarm/1")
	req.Header.Set(EventHeader, EventJobFailed)
	if w.cfg.Secret != "" {
		req.Header.Set(SignatureHeader, Sign([]byte(w.cfg.Secret), body))
	}
	resp, err := w.cfg.Client.Do(req)
	if err != nil {
		// Do's error repeats the full URL; keep credentials out of logs.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("webhook alarm POST %s: %w", w.target, err)
	}
	defer resp.Body.Close()
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // let the connection be reused
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("webhook alarm POST %s: status %d: %s", w.target, resp.StatusCode, strings.TrimSpace(string(snippet)))
	}
	return nil
}
