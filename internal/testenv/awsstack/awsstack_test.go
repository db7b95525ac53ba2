package awsstack_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/testenv/awsstack"
	"github.com/xjobdev/xjob/internal/testenv/tool"
	"github.com/xjobdev/xjob/pkg/adminclient"
	"github.com/xjobdev/xjob/pkg/driver"
	"github.com/xjobdev/xjob/pkg/executor"
)

// TestDeploymentEndToEnd starts the emulated deployment, registers an SDK
// executor at the executor API's function URL, creates an every-second
// job with the admin client (HTTP API) and waits for a successful result:
// the scan schedule, the ring mapping (the ring function dispatches the
// fast lane itself) and the function URL took part; a direct invocation of the dispatch function
// triggers the job by hand, the results queue's mapping polls, and the meter saw each
// function's requests.
func TestDeploymentEndToEnd(t *testing.T) {
	tool.SkipIfShort(t, "the AWS emulators (dynalite, fauxqs)")
	ctx := context.Background()
	d := awsstack.StartFor(t, ctx, awsstack.Options{Shards: 2, RingPollers: 2,
		PollWait: time.Second, Logger: slog.New(slog.DiscardHandler)})
	if ddb, sq := d.Endpoints(); !strings.HasPrefix(ddb, "http://127.0.0.1:") || !strings.HasPrefix(sq, "http://127.0.0.1:") {
		t.Errorf("emulators not on loopback: %s %s", ddb, sq)
	}

	addr, stop := sdkExecutor(t, d, "awsstack-test", nil, map[string]executor.HandlerFunc{"ok": succeed})
	defer stop()

	api, err := adminclient.New(d.URL(), d.AdminToken())
	if err != nil {
		t.Fatal(err)
	}
	g, err := api.GroupCreate(ctx, xjob.Group{AppName: "awsstack-test", Title: "t", AddressType: xjob.AddressManual,
		AddressList: []string{addr}})
	if err != nil {
		t.Fatalf("group: %v", err)
	}
	job := xjob.Job{GroupID: g.ID, Description: "every second", Author: "t", ScheduleType: xjob.ScheduleCron,
		ScheduleConf: "* * * * * ?", Handler: "ok", TriggerStatus: xjob.StatusRunning}
	job.ApplyDefaults()
	j, err := api.JobCreate(ctx, job)
	if err != nil {
		t.Fatalf("job: %v", err)
	}

	deadline := time.Now().Add(20 * time.Second)
	for {
		page, err := d.Store().LogList(ctx, driver.LogListParams{JobID: j.ID, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		done := false
		for _, l := range page.Logs {
			done = done || (l.TriggerType == xjob.TriggerCron && l.HandleCode == xjob.CodeSuccess)
		}
		if done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no successful scheduled run in 20 s; invocation errors: %v", d.Errors())
		}
		time.Sleep(200 * time.Millisecond)
	}
	manual := fmt.Sprintf(`{"jobId":%d,"executorParam":"by hand","addressList":[%q]}`, j.ID, addr)
	if out, err := d.Invoke(ctx, "dispatch", "", []byte(manual)); err != nil || !strings.Contains(string(out), `"triggerCodes":[200]`) {
		t.Errorf("manual trigger: %s, %v", out, err)
	}
	// The results queue's mapping long-polls (1 s) whether or not a
	// result comes.
	for end := time.Now().Add(5 * time.Second); d.Meter().Snapshot().Requests("esm:dispatch", "") == 0 && time.Now().Before(end); {
		time.Sleep(100 * time.Millisecond)
	}
	u := d.Meter().Snapshot()
	for _, fn := range []string{"scan", "ring", "dispatch", "callback", "registry", "web", "esm:ring", "esm:dispatch"} {
		if u.Requests(fn, "") == 0 {
			t.Errorf("no AWS requests metered for %s: %+v", fn, u.Ops[fn])
		}
	}
	// Executors' requests are function URL invocations of the callback
	// function, none an HTTP API request (the admin client's are, web's).
	if u.URLRequests == 0 || u.URLRequests != u.Invokes["callback"].Invocations || u.HTTPRequests != u.Invokes["web"].Invocations {
		t.Errorf("function URL requests %d, callback invocations %d; HTTP API requests %d, web invocations %d",
			u.URLRequests, u.Invokes["callback"].Invocations, u.HTTPRequests, u.Invokes["web"].Invocations)
	}
	// One result a second: the callback function wrote each result's page
	// itself; it recorded a result on the results queue only when it lost
	// that page's conditional round (driver.OneRound) to another writer,
	// such as the ring recording the executor's reply to the same page,
	// twice: a send per two lost writes at the most.
	cbOps := u.Ops["callback"]
	if cbOps["dynamodb:PutItem"].Requests == 0 || 2*cbOps["sqs:SendMessageBatch"].Requests > cbOps["dynamodb:PutItem"].Lost {
		t.Errorf("callback function's requests %+v: want pages written, a result queued only after two lost rounds", cbOps)
	}
	queuedBefore, lostBefore := cbOps["sqs:SendMessageBatch"].Requests, cbOps["dynamodb:PutItem"].Lost
	// A request of a batching executor is recorded on the results queue,
	// and the dispatch function applies it (these log ids name no log:
	// the apply's verdicts are logged, and the executor hears 200).
	batch := `[{"logId":9001,"logDateTim":0,"handleCode":200},{"logId":9002,"logDateTim":0,"handleCode":200},` +
		`{"logId":9003,"logDateTim":0,"handleCode":200},{"logId":9004,"logDateTim":0,"handleCode":200},` +
		`{"logId":9005,"logDateTim":0,"handleCode":200}]`
	before := u.Ops["dispatch"]["dynamodb:BatchGetItem"].Requests
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, d.ExecutorURL()+"/api/callback", strings.NewReader(batch))
	req.Header.Set("XXL-JOB-ACCESS-TOKEN", d.AccessToken())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `"code":200`) {
		t.Errorf("batched callback: %d %s", resp.StatusCode, body)
	}
	applied := func() int { return d.Meter().Snapshot().Ops["dispatch"]["dynamodb:BatchGetItem"].Requests }
	for end := time.Now().Add(10 * time.Second); applied() == before && time.Now().Before(end); {
		time.Sleep(100 * time.Millisecond)
	}
	u = d.Meter().Snapshot()
	// Meanwhile the every-second results may have lost rounds too, each
	// queued in a send of its own after two: the batch is one send, and
	// any others came with two lost writes each.
	cbOps = u.Ops["callback"]
	sends, lost := cbOps["sqs:SendMessageBatch"].Requests-queuedBefore, cbOps["dynamodb:PutItem"].Lost-lostBefore
	if sends < 1 || 2*(sends-1) > lost {
		t.Errorf("callback function's requests %+v: want the batch recorded on the results queue in one send, got %d sends with %d lost writes", cbOps, sends, lost)
	}
	if applied() == before {
		t.Errorf("dispatch function's requests %+v: want the recorded batch applied", u.Ops["dispatch"])
	}
	// One scan invocation per minute: one tick, then it returned.
	if s := u.Invokes["scan"]; s.Invocations != 1 {
		t.Errorf("scan invocations %+v, want 1", s)
	}
	d.Close()
	if errs := d.Errors(); len(errs) > 0 {
		t.Errorf("invocation errors: %v", errs)
	}
	for _, pu := range d.EmulatorUsage() {
		if pu.CPUSeconds <= 0 {
			t.Errorf("%s: no CPU accounted after Close: %+v", pu.Name, pu)
		}
	}
}
