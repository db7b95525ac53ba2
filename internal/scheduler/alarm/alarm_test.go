package alarm

import (
	"bytes"
	"context"
	"crypto/hmac"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/driver"
)

var start = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func sample() driver.Alarm {
	return driver.Alarm{
		Job: xjob.Job{ID: 7, GroupID: 2, Description: "nightly report", Author: "ops",
			AlarmEmail: "a@example.com, b@example.com", Handler: "reportHandler"},
		Log: xjob.Log{ID: 99, JobID: 7, TriggerType: xjob.TriggerCron, ScheduledTime: 1000, TriggerTime: 1001,
			TriggerCode: 200, TriggerMsg: "ok", HandleTime: 2000, HandleCode: 500, HandleMsg: "boom",
			ExecutorAddress: "http://10.0.0.5:9999/", ExecutorParam: "x=1", ExecutorShardingParam: "1/3",
			ExecutorFailRetryCount: 2},
	}
}

// server starts an httptest server on 127.0.0.1 with handler h.
func server(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

func TestWebhookDelivers(t *testing.T) {
	t.Parallel()
	type got struct {
		header http.Header
		body   []byte
	}
	ch := make(chan got, 1)
	srv := server(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		ch <- got{r.Header.Clone(), b}
		w.WriteHeader(http.StatusNoContent)
	})
	wh, err := NewWebhook(WebhookConfig{
		URL: srv.URL + "/hooks/xjob", Secret: "s3cret",
		Headers: map[string]string{"Authorization": "Bearer t0ken"},
		Clock:   clock.NewFake(start),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := wh.Alarm(context.Background(), sample()); err != nil {
		t.Fatalf("Alarm: %v", err)
	}
	g := <-ch
	if ct := g.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("content type %q", ct)
	}
	if g.header.Get("Authorization") != "Bearer t0ken" || g.header.Get(EventHeader) != EventJobFailed {
		t.Errorf("headers %v", g.header)
	}
	if sig := g.header.Get(SignatureHeader); !hmac.Equal([]byte(sig), []byte(Sign([]byte("s3cret"), g.body))) {
		t.Errorf("signature %q does not verify", sig)
	}
	// The field names are a contract: check them on the raw JSON.
	var raw map[string]any
	if err := json.Unmarshal(g.body, &raw); err != nil {
		t.Fatal(err)
	}
	job, _ := raw["job"].(map[string]any)
	lg, _ := raw["log"].(map[string]any)
	checks := map[string]any{
		"version": float64(1), "event": "job.failed", "sentAt": float64(start.UnixMilli()),
	}
	for k, want := range checks {
		if raw[k] != want {
			t.Errorf("%s = %v, want %v", k, raw[k], want)
		}
	}
	jobChecks := map[string]any{"id": float64(7), "groupId": float64(2), "description": "nightly report",
		"author": "ops", "handler": "reportHandler"}
	for k, want := range jobChecks {
		if job[k] != want {
			t.Errorf("job.%s = %v, want %v", k, job[k], want)
		}
	}
	if emails, _ := job["alarmEmails"].([]any); len(emails) != 2 || emails[1] != "b@example.com" {
		t.Errorf("job.alarmEmails = %v", job["alarmEmails"])
	}
	logChecks := map[string]any{"id": float64(99), "triggerType": "CRON", "scheduledTime": float64(1000),
		"triggerTime": float64(1001), "triggerCode": float64(200), "triggerMsg": "ok", "handleTime": float64(2000),
		"handleCode": float64(500), "handleMsg": "boom", "executorAddress": "http://10.0.0.5:9999/",
		"executorParam": "x=1", "shardingParam": "1/3", "failRetryCount": float64(2)}
	for k, want := range logChecks {
		if lg[k] != want {
			t.Errorf("log.%s = %v, want %v", k, lg[k], want)
		}
	}
}

func TestWebhookNoSecretNoSignature(t *testing.T) {
	t.Parallel()
	ch := make(chan http.Header, 1)
	srv := server(t, func(w http.ResponseWriter, r *http.Request) {
		ch <- r.Header.Clone()
	})
	wh, err := NewWebhook(WebhookConfig{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	if err := wh.Alarm(context.Background(), sample()); err != nil {
		t.Fatal(err)
	}
	if h := <-ch; h.Get(SignatureHeader) != "" {
		t.Errorf("unexpected signature %q", h.Get(SignatureHeader))
	}
}

func TestWebhookFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		handler func(w http.ResponseWriter, r *http.Request, release <-chan struct{})
		wantIn  string
	}{
		{"server error", func(w http.ResponseWriter, r *http.Request, _ <-chan struct{}) {
			http.Error(w, "relay down", http.StatusInternalServerError)
		}, "status 500: relay down"},
		{"forbidden", func(w http.ResponseWriter, r *http.Request, _ <-chan struct{}) {
			w.WriteHeader(http.StatusForbidden)
		}, "status 403"},
		{"timeout", func(w http.ResponseWriter, r *http.Request, release <-chan struct{}) {
			// Hold the request until the client gives up (the server notices
			// the closed connection once the body is read) or the test ends.
			_, _ = io.Copy(io.Discard, r.Body)
			select {
			case <-r.Context().Done():
			case <-release:
			}
		}, "deadline exceeded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			release := make(chan struct{})
			srv := server(t, func(w http.ResponseWriter, r *http.Request) { tt.handler(w, r, release) })
			t.Cleanup(func() { close(release) }) // before srv.Close, which waits for handlers
			wh, err := NewWebhook(WebhookConfig{URL: srv.URL + "/x?token=secret-token", Timeout: 200 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			err = wh.Alarm(context.Background(), sample())
			if err == nil || !strings.Contains(err.Error(), tt.wantIn) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.wantIn)
			}
			if strings.Contains(err.Error(), "secret-token") {
				t.Fatalf("error leaks the URL query: %v", err)
			}
		})
	}
}

func TestNewWebhookValidates(t *testing.T) {
	t.Parallel()
	bad := []WebhookConfig{
		{},
		{URL: "ftp://example.com/x"},
		{URL: "/relative"},
		{URL: "http://example.com", Timeout: -1},
		{URL: "http://example.com", Headers: map[string]string{"Bad Header": "x"}},
	}
	for i, cfg := range bad {
		if _, err := NewWebhook(cfg); err == nil {
			t.Errorf("config %d accepted: %+v", i, cfg)
		}
	}
}

func TestLogAlarmer(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	a := Log{Logger: slog.New(slog.NewJSONHandler(&buf, nil))}
	if err := a.Alarm(context.Background(), sample()); err != nil {
		t.Fatal(err)
	}
	var rec map[string]any
	if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
		t.Fatalf("not one JSON record: %q", buf.String())
	}
	want := map[string]any{"level": "ERROR", "msg": "job failed", "jobId": float64(7), "jobDesc": "nightly report",
		"logId": float64(99), "triggerCode": float64(200), "triggerMsg": "ok", "handleCode": float64(500), "handleMsg": "boom"}
	for k, v := range want {
		if rec[k] != v {
			t.Errorf("%s = %v, want %v", k, rec[k], v)
		}
	}
}

type countingAlarmer struct {
	calls atomic.Int32
	err   error
}

func (c *countingAlarmer) Alarm(context.Context, driver.Alarm) error {
	c.calls.Add(1)
	return c.err
}

func TestMulti(t *testing.T) {
	t.Parallel()
	errA := errors.New("a down")
	errC := errors.New("c down")
	a, b, c := &countingAlarmer{err: errA}, &countingAlarmer{}, &countingAlarmer{err: errC}
	err := Multi{a, nil, b, c}.Alarm(context.Background(), sample())
	if !errors.Is(err, errA) || !errors.Is(err, errC) {
		t.Fatalf("err = %v, want both failures", err)
	}
	for i, x := range []*countingAlarmer{a, b, c} {
		if x.calls.Load() != 1 {
			t.Errorf("alarmer %d called %d times", i, x.calls.Load())
		}
	}
	ok := &countingAlarmer{}
	if err := (Multi{ok, Log{Logger: slog.New(slog.DiscardHandler)}}).Alarm(context.Background(), sample()); err != nil {
		t.Fatalf("all ok: %v", err)
	}
	if err := (Multi{}).Alarm(context.Background(), sample()); err != nil {
		t.Fatalf("empty: %v", err)
	}
}

// A redirect is the receiver's final answer: the signature, the headers
// and the payload never reach the Location, with or without a configured
// client.
func TestWebhookRedirectNotFollowed(t *testing.T) {
	t.Parallel()
	var trapped atomic.Int64
	trap := server(t, func(w http.ResponseWriter, r *http.Request) {
		trapped.Add(1)
	})
	for _, code := range []int{301, 302, 303, 307, 308} {
		redirector := server(t, func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, trap.URL+"/stolen", code)
		})
		for _, client := range []*http.Client{nil, {}} {
			wh, err := NewWebhook(WebhookConfig{URL: redirector.URL, Secret: "s3cret", Client: client,
				Headers: map[string]string{"Authorization": "Bearer x"}})
			if err != nil {
				t.Fatal(err)
			}
			if err := wh.Alarm(context.Background(), sample()); err == nil || !strings.Contains(err.Error(), "status") {
				t.Errorf("%d: alarm through a redirect: %v, want a status error", code, err)
			}
		}
	}
	if n := trapped.Load(); n != 0 {
		t.Fatalf("%d alarms reached the redirect target", n)
	}
}
