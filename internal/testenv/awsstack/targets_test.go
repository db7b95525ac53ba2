package awsstack_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/app/lambdaapp"
	"github.com/xjobdev/xjob/internal/target"
	"github.com/xjobdev/xjob/internal/testenv/awsstack"
	"github.com/xjobdev/xjob/internal/testenv/emulator"
	"github.com/xjobdev/xjob/internal/testenv/syncbuf"
	"github.com/xjobdev/xjob/internal/testenv/tool"
	"github.com/xjobdev/xjob/pkg/driver"
)

// TestTargetJobsOnBootstraps runs HTTP and AWS jobs on the AWS deployment
// with the real bootstraps (functions/*) behind the Lambda Runtime API:
// an every-second HTTP job with a secret header calls a loopback endpoint
// from the ring (its fast lane, in process) with the header the web
// function sealed, and an SQS job triggered by a direct invocation of the
// dispatch function puts its message on a fauxqs queue the deployment
// lists in XJOB_AWS_TARGET_ARNS; each log records the call's result. A
// job naming an ARN not listed is refused by the web function, naming
// the field and the stack's parameter, and nothing is written.
func TestTargetJobsOnBootstraps(t *testing.T) {
	tool.SkipIfShort(t, "the AWS emulators (dynalite, fauxqs)")
	ctx := context.Background()
	bin := awsstack.BootstrapsFor(t, ctx)
	logs := &syncbuf.Buffer{}
	d, err := awsstack.Start(ctx, awsstack.Options{Shards: 2, RingPollers: 2,
		PollWait: time.Second, ScanPeriod: 4 * time.Second, ScanTimeout: 5500 * time.Millisecond, NoMaintenance: true,
		Bootstraps: bin, BootstrapOutput: logs, Logger: slog.New(slog.DiscardHandler), TargetQueues: []string{"xjob-target"}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		d.Close()
		if t.Failed() {
			t.Logf("bootstrap logs:\n%s", tail(logs.String(), 60))
		}
	}()
	queueURL, queueARN := d.TargetQueue("xjob-target")

	var (
		mu    sync.Mutex
		calls = map[string]string{} // log id → Authorization header
	)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls[r.URL.Query().Get("log")] = r.Header.Get("Authorization")
		mu.Unlock()
		_, _ = io.WriteString(w, "pong "+r.URL.Query().Get("log"))
	}))
	defer hook.Close()

	var g xjob.Group
	if code := v1(t, d, "POST", "/v1/groups", map[string]any{"appname": "targets", "title": "targets", "addressType": 0}, &g); code != http.StatusCreated {
		t.Fatalf("create group: %d", code)
	}
	job := func(glueType, source string, status int) map[string]any {
		return map[string]any{"jobGroup": g.ID, "jobDesc": glueType + " target", "author": "test", "scheduleType": "FIX_RATE",
			"scheduleConf": "1", "glueType": glueType, "executorParam": "nightly", "triggerStatus": status, "glueSource": source}
	}

	// Refused at save: an ARN the stack does not list.
	var before, after struct {
		Items []xjob.Job `json:"items"`
	}
	v1(t, d, "GET", "/v1/jobs", nil, &before)
	var refused struct {
		Problems []xjob.FieldProblem `json:"problems"`
	}
	other := strings.TrimSuffix(queueARN, "xjob-target") + "not-listed"
	if code := v1(t, d, "POST", "/v1/jobs", job("AWS", `{"arn":"`+other+`"}`, 0), &refused); code != http.StatusBadRequest ||
		len(refused.Problems) != 1 || refused.Problems[0].Field != "glueSource.arn" ||
		!strings.Contains(refused.Problems[0].Message, "AWSTargetARNs") {
		t.Fatalf("unlisted ARN: HTTP %d %+v, want 400 on glueSource.arn naming the AWSTargetARNs parameter", code, refused)
	}
	if v1(t, d, "GET", "/v1/jobs", nil, &after); len(after.Items) != len(before.Items) {
		t.Fatalf("a refused job was written: %d jobs before, %d after", len(before.Items), len(after.Items))
	}

	// The HTTP job, fired every second by the ring.
	spec := fmt.Sprintf(`{"url":%q,"secretHeaders":{"Authorization":"Bearer s3cret"}}`, hook.URL+"/hook?log={{logId}}")
	var hj xjob.Job
	if code := v1(t, d, "POST", "/v1/jobs", job("HTTP", spec, 1), &hj); code != http.StatusCreated {
		t.Fatalf("create HTTP job: %d", code)
	}
	var done []xjob.Log
	if err := await(40*time.Second, func() (bool, string) {
		page, err := d.Store().LogList(ctx, driver.LogListParams{JobID: hj.ID, Limit: 100})
		if err != nil {
			return false, err.Error()
		}
		done = done[:0]
		for _, l := range page.Logs {
			if l.HandleCode != 0 {
				done = append(done, l)
			}
		}
		return len(done) >= 2, fmt.Sprintf("%d logs, %d with a result; invocation errors %v", len(page.Logs), len(done), d.Errors())
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := v1Stop(t, d, hj.ID); err != nil {
		t.Fatal(err)
	}
	for _, l := range done {
		id := fmt.Sprint(l.ID)
		mu.Lock()
		auth := calls[id]
		mu.Unlock()
		if l.HandleCode != xjob.CodeSuccess || l.ExecutorAddress != target.Address || l.TriggerType != xjob.TriggerCron ||
			!strings.Contains(l.HandleMsg, "HTTP 200 OK") || !strings.Contains(l.HandleMsg, "pong "+id) || strings.Contains(l.HandleMsg, "s3cret") {
			t.Errorf("HTTP job log %+v", l)
		}
		if auth != "Bearer s3cret" {
			t.Errorf("log %d: the endpoint saw Authorization %q, want the secret header the web function sealed", l.ID, auth)
		}
	}

	// The SQS job, triggered by hand through the dispatch function.
	var qj xjob.Job
	if code := v1(t, d, "POST", "/v1/jobs", job("AWS", `{"arn":"`+queueARN+`","input":"{{param}} #{{logId}}"}`, 0), &qj); code != http.StatusCreated {
		t.Fatalf("create SQS job: %d", code)
	}
	out, err := d.Invoke(ctx, "dispatch", "", []byte(fmt.Sprintf(`{"jobId":%d}`, qj.ID)))
	if err != nil {
		t.Fatalf("direct dispatch invocation: %v", err)
	}
	var mr lambdaapp.ManualResult
	if err := json.Unmarshal(out, &mr); err != nil || len(mr.LogIDs) != 1 || mr.TriggerCodes[0] != xjob.CodeSuccess {
		t.Fatalf("manual trigger result %s (%v)", out, err)
	}
	// The invocation ended with the call done: its result is in the log.
	l, err := d.Store().LogGet(ctx, mr.LogIDs[0])
	if err != nil {
		t.Fatal(err)
	}
	if l.HandleCode != xjob.CodeSuccess || !strings.Contains(l.HandleMsg, "sent, MessageId ") {
		t.Fatalf("SQS job log after the invocation: %+v", l)
	}
	_, sqsEndpoint := d.Endpoints()
	q := sqs.NewFromConfig(emulator.Config(), func(o *sqs.Options) { o.BaseEndpoint = aws.String(sqsEndpoint) })
	got, err := q.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(queueURL), WaitTimeSeconds: 5, MaxNumberOfMessages: 10})
	if err != nil || len(got.Messages) != 1 || aws.ToString(got.Messages[0].Body) != fmt.Sprintf("nightly #%d", l.ID) {
		t.Fatalf("target queue received %+v, %v; want one message %q", got, err, fmt.Sprintf("nightly #%d", l.ID))
	}
	for _, err := range d.Errors() {
		t.Errorf("invocation error: %v", err)
	}
}

// v1 calls the /v1 admin API of d with its admin token and decodes the
// reply (success or problems) into out; it returns the status.
func v1(t *testing.T, d *awsstack.Deployment, method, path string, body, out any) int {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, d.URL()+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+d.AdminToken())
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: HTTP %d: %v: %s", method, path, res.StatusCode, err, b)
		}
	}
	return res.StatusCode
}

// v1Stop stops job id.
func v1Stop(t *testing.T, d *awsstack.Deployment, id int64) (xjob.Job, error) {
	var j xjob.Job
	if code := v1(t, d, "POST", fmt.Sprintf("/v1/jobs/%d/stop", id), struct{}{}, &j); code != http.StatusOK {
		return j, fmt.Errorf("stop job %d: HTTP %d", id, code)
	}
	return j, nil
}

// TestHangingTargetCutAtInvocationEnd: on AWS a target call cannot
// outlive the invocation that made it (Lambda would freeze it). An HTTP
// job whose endpoint never answers, with a job timeout (60 s) longer
// than the dispatch function's (30 s), triggered by a direct invocation:
// the invocation returns before its timeout with the call cut and its
// log failed, saying why; the environment's worker is free, and the next
// invocation's call of a job that answers succeeds.
func TestHangingTargetCutAtInvocationEnd(t *testing.T) {
	tool.SkipIfShort(t, "the AWS emulators (dynalite, fauxqs)")
	ctx := context.Background()
	d, err := awsstack.Start(ctx, awsstack.Options{Shards: 1, RingPollers: 1,
		PollWait: time.Second, NoMaintenance: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		if errors.Is(err, emulator.ErrNotInstalled) {
			tool.Missing(t, err)
		}
		t.Fatal(err)
	}
	defer d.Close()
	release := make(chan struct{})
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hang" {
			select {
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		_, _ = io.WriteString(w, "ok")
	}))
	defer hook.Close()
	defer close(release)
	var g xjob.Group
	if code := v1(t, d, "POST", "/v1/groups", map[string]any{"appname": "cut-calls", "title": "cut", "addressType": 0}, &g); code != http.StatusCreated {
		t.Fatalf("create group: %d", code)
	}
	create := func(path string) xjob.Job {
		var j xjob.Job
		body := map[string]any{"jobGroup": g.ID, "jobDesc": path, "author": "test", "scheduleType": "FIX_RATE", "scheduleConf": "60",
			"glueType": "HTTP", "triggerStatus": 0, "executorTimeout": 60, "glueSource": fmt.Sprintf(`{"url":%q}`, hook.URL+path)}
		if code := v1(t, d, "POST", "/v1/jobs", body, &j); code != http.StatusCreated {
			t.Fatalf("create job %s: %d", path, code)
		}
		return j
	}
	hang, ok := create("/hang"), create("/ok")
	trigger := func(j xjob.Job) xjob.Log {
		t.Helper()
		out, err := d.Invoke(ctx, "dispatch", "dispatch", []byte(fmt.Sprintf(`{"jobId":%d}`, j.ID)))
		if err != nil {
			t.Fatalf("direct dispatch invocation: %v", err)
		}
		var mr lambdaapp.ManualResult
		if err := json.Unmarshal(out, &mr); err != nil || len(mr.LogIDs) != 1 {
			t.Fatalf("manual trigger result %s (%v)", out, err)
		}
		l, err := d.Store().LogGet(ctx, mr.LogIDs[0])
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	start := time.Now()
	l := trigger(hang)
	took := time.Since(start)
	if took >= awsstack.DispatchTimeout {
		t.Fatalf("the invocation took %v, past the dispatch function's timeout %v", took, awsstack.DispatchTimeout)
	}
	if l.HandleCode != xjob.CodeFail || !strings.Contains(l.HandleMsg, "cut: the dispatch function's invocation was about to reach its timeout") {
		t.Fatalf("hanging call's log after %v: %+v", took, l)
	}
	if l = trigger(ok); l.HandleCode != xjob.CodeSuccess || !strings.Contains(l.HandleMsg, "HTTP 200 OK") {
		t.Fatalf("next call's log: %+v", l)
	}
	for _, err := range d.Errors() {
		t.Errorf("invocation error: %v", err)
	}
}
