package lambdaapp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/admin"
	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/pkg/driver"
	"github.com/xjobdev/xjob/pkg/protocol"
)

// xjob log kill on AWS, with the SDK executor: the run's log reads 500
// "job killed manually" whether the web function's kill result or the
// executor's own report of the killed run (through the callback
// function) is recorded first.
func TestKillOutcomeOnAWS(t *testing.T) {
	for _, tc := range []struct {
		name          string
		executorFirst bool
	}{{"as it comes", false}, {"executor's report first", true}} {
		t.Run(tc.name, func(t *testing.T) {
			e := setupEnv(t)
			ctx := context.Background()
			gw := e.apiGateway()
			rec := newExecutor(t, gw.URL)
			g, err := e.store.GroupInsert(ctx, xjob.Group{AppName: appName, Title: "kill", AddressType: xjob.AddressManual,
				AddressList: []string{rec.srv.URL + "/"}})
			if err != nil {
				t.Fatal(err)
			}
			j := xjob.Job{GroupID: g.ID, Description: "blocks", Author: "t", ScheduleType: xjob.ScheduleNone,
				Handler: "block", TriggerStatus: xjob.StatusStopped}
			j.ApplyDefaults()
			if j, err = e.store.JobInsert(ctx, j); err != nil {
				t.Fatal(err)
			}
			// A run in progress: its log triggered on the executor, which runs it.
			now := time.Now().UnixMilli()
			l, err := e.store.LogCreate(ctx, xjob.Log{OccurrenceID: fire.Occurrence{JobID: j.ID, Type: xjob.TriggerManual,
				Ref: "kill"}.ID(0), JobID: j.ID, GroupID: g.ID, TriggerType: xjob.TriggerManual, TriggerTime: now,
				ExecutorHandler: "block"})
			if err != nil {
				t.Fatal(err)
			}
			if err := e.store.LogTriggered(ctx, driver.LogTriggeredParams{ID: l.ID, ExecutorAddress: rec.srv.URL + "/",
				TriggerCode: xjob.CodeSuccess}); err != nil {
				t.Fatal(err)
			}
			body, _ := json.Marshal(protocol.TriggerParam{JobID: j.ID, ExecutorHandler: "block", LogID: l.ID, LogDateTime: now,
				ExecutorBlockStrategy: string(xjob.BlockSerialExecution), GlueType: string(xjob.GlueBean)})
			req, _ := http.NewRequest("POST", rec.srv.URL+"/run", bytes.NewReader(body))
			req.Header.Set(protocol.AccessTokenHeader, accessToken)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			select {
			case <-rec.blocked:
			case <-time.After(10 * time.Second):
				t.Fatal("the run did not start")
			}
			stored := func() xjob.Log {
				got, err := e.store.LogGet(ctx, l.ID)
				if err != nil {
					t.Fatal(err)
				}
				return got
			}
			handled := func() bool { got := stored(); return got.Handled() }
			if tc.executorFirst {
				// /kill answers only once the executor's report is recorded.
				rec.afterKill = func() { settle(10*time.Second, handled) }
			}
			var killed xjob.Log
			adminCall(t, gw.URL, "POST", fmt.Sprintf("/v1/logs/%d/kill", l.ID), map[string]any{}, &killed)
			if tc.executorFirst && !handled() {
				t.Fatal("the executor's report was not recorded before /kill answered")
			}
			// Both results are in once the executor's callback went out
			// (its run log notes it).
			eventually(t, 10*time.Second, "the executor's callback", func() bool {
				var res protocol.LogResult
				adminCall(t, gw.URL, "GET", fmt.Sprintf("/v1/logs/%d/executor-log?from=1", l.ID), nil, &res)
				return strings.Contains(res.LogContent, "callback finish")
			})
			for _, got := range []xjob.Log{killed, stored()} {
				if got.HandleCode != xjob.CodeFail || got.HandleMsg != admin.KillMsg {
					t.Fatalf("killed log: %d %q, want 500 %q", got.HandleCode, got.HandleMsg, admin.KillMsg)
				}
			}
		})
	}
}
