package dispatch

import (
	"testing"
	"unsafe"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/fire"
)

// TestNewTriggerKeepsWhatDispatchReads checks that a trigger carries every
// field of its job a dispatch reads, and the task's overrides, without
// holding the job itself.
func TestNewTriggerKeepsWhatDispatchReads(t *testing.T) {
	t.Parallel()
	param, retry := "override", 7
	job := xjob.Job{ID: 41, GroupID: 3, Handler: "demoHandler", RouteStrategy: xjob.RouteShardingBroadcast,
		BlockStrategy: xjob.BlockStrategy("DISCARD_LATER"), TimeoutSeconds: 9, GlueType: xjob.GlueType("GLUE_SHELL"),
		GlueSource: "echo hi", GlueUpdatedAt: 1700000000000, Param: "p", FailRetryCount: 2,
		Description: "not read by a dispatch", Author: "nobody"}
	cases := []struct {
		name      string
		task      fire.DispatchTask
		wantParam string
		wantRetry int
	}{
		{name: "job's own param and retries", task: fire.DispatchTask{}, wantParam: "p", wantRetry: 2},
		{name: "task overrides", task: fire.DispatchTask{Param: &param, FailRetryCount: &retry}, wantParam: "override", wantRetry: 7},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			tr := (&Dispatcher{}).newTrigger(&job, c.task)
			want := triggerJob{ID: 41, GroupID: 3, Handler: "demoHandler", RouteStrategy: xjob.RouteShardingBroadcast,
				BlockStrategy: "DISCARD_LATER", TimeoutSeconds: 9, GlueType: "GLUE_SHELL", GlueSource: "echo hi", GlueUpdatedAt: 1700000000000}
			if tr.job != want {
				t.Errorf("job = %+v, want %+v", tr.job, want)
			}
			if tr.param != c.wantParam || tr.retry != c.wantRetry {
				t.Errorf("param, retry = %q, %d, want %q, %d", tr.param, tr.retry, c.wantParam, c.wantRetry)
			}
			if !tr.broadcast || tr.target {
				t.Errorf("broadcast, target = %v, %v, want true, false", tr.broadcast, tr.target)
			}
		})
	}
}

// TestTriggerSmallerThanJob guards the memory of prepared instants: tens
// of thousands of triggers are alive under a steady load, and a trigger
// that embedded the whole job again would be 712 bytes.
func TestTriggerSmallerThanJob(t *testing.T) {
	t.Parallel()
	if got, job := unsafe.Sizeof(trigger{}), unsafe.Sizeof(xjob.Job{}); got >= job {
		t.Errorf("trigger is %d bytes, the job %d: it should hold only what a dispatch reads", got, job)
	}
}
