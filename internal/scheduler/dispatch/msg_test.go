package dispatch

import (
	"fmt"
	"strings"
	"testing"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/internal/text"
	"github.com/xjobdev/xjob/pkg/protocol"
)

// triggerMsgFmt is triggerMsg as it was written with fmt, kept to pin the
// appended version to the same bytes.
func triggerMsgFmt(adminAddress string, t *trigger, address, trail string, ret protocol.ReturnT) string {
	var b strings.Builder
	reg := "automatic"
	switch {
	case t.target:
		reg = "built-in (" + string(t.job.GlueType) + " job)"
	case t.group.addressType == xjob.AddressManual || len(t.task.AddressList) > 0:
		reg = "manual"
	}
	fmt.Fprintf(&b, "Trigger type: %s<br>", t.task.Occurrence.Type)
	if adminAddress != "" {
		fmt.Fprintf(&b, "Admin address: %s<br>", adminAddress)
	}
	fmt.Fprintf(&b, "Executor registry type: %s<br>", reg)
	fmt.Fprintf(&b, "Executor address list: %s<br>", strings.Join(t.addrs, ","))
	fmt.Fprintf(&b, "Route strategy: %s<br>", t.job.RouteStrategy)
	fmt.Fprintf(&b, "Block strategy: %s<br>", t.job.BlockStrategy)
	fmt.Fprintf(&b, "Timeout: %d<br>", t.job.TimeoutSeconds)
	fmt.Fprintf(&b, "Fail retry count: %d<br>", t.retry)
	b.WriteString("<br><span style=\"color:#00c0ef;\" > >>>>>>>>>>>Trigger<<<<<<<<<<< </span><br>")
	if trail != "" {
		b.WriteString(trail)
		b.WriteString("<br><br>")
	}
	fmt.Fprintf(&b, "Trigger result: %s<br>address: %s<br>code: %d<br>msg: %s", codeTitle(ret.Code), address, ret.Code, ret.Msg)
	return text.Truncate(b.String(), 15000)
}

func TestTriggerMsgMatchesFormatted(t *testing.T) {
	t.Parallel()
	job := triggerJob{RouteStrategy: xjob.RouteFirst, BlockStrategy: xjob.BlockSerialExecution, TimeoutSeconds: 30, GlueType: xjob.GlueBean}
	cases := []struct {
		name, admin, address, trail string
		tr                          trigger
		ret                         protocol.ReturnT
	}{
		{name: "automatic", address: "http://127.0.0.1:9999", ret: protocol.ReturnT{Code: 200},
			tr: trigger{job: job, task: fire.DispatchTask{Occurrence: fire.Occurrence{Type: xjob.TriggerCron}},
				addrs: []string{"http://127.0.0.1:9999", "http://127.0.0.1:9998"}, retry: 2}},
		{name: "manual with admin and trail", admin: "http://admin:8080/xxl-job-admin", address: "http://a:1",
			trail: "route trail <b>x</b>", ret: protocol.ReturnT{Code: 500, Msg: "boom, ünïcode\n"},
			tr: trigger{job: job, group: groupOf(xjob.Group{AddressType: xjob.AddressManual}),
				task: fire.DispatchTask{Occurrence: fire.Occurrence{Type: xjob.TriggerManual}}, retry: -1}},
		{name: "target", ret: protocol.ReturnT{Code: 200, Msg: strings.Repeat("m", 20000)},
			tr: trigger{job: triggerJob{GlueType: xjob.GlueHTTP, TimeoutSeconds: -5}, target: true,
				task: fire.DispatchTask{Occurrence: fire.Occurrence{Type: xjob.TriggerRetry}, AddressList: []string{"x"}}}},
		{name: "no addresses", ret: protocol.ReturnT{Code: 0}, tr: trigger{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			d := &Dispatcher{cfg: Config{AdminAddress: c.admin}}
			tr := c.tr
			got := d.triggerMsg(&tr, c.address, c.trail, c.ret)
			if want := triggerMsgFmt(c.admin, &tr, c.address, c.trail, c.ret); got != want {
				t.Errorf("triggerMsg:\n got %q\nwant %q", got, want)
			}
		})
	}
}

func BenchmarkTriggerMsg(b *testing.B) {
	d := &Dispatcher{}
	tr := trigger{job: triggerJob{RouteStrategy: xjob.RouteFirst, BlockStrategy: xjob.BlockSerialExecution, GlueType: xjob.GlueBean},
		task: fire.DispatchTask{Occurrence: fire.Occurrence{Type: xjob.TriggerCron}}, addrs: []string{"http://127.0.0.1:9999"}}
	ret := protocol.ReturnT{Code: 200}
	b.ReportAllocs()
	for b.Loop() {
		_ = d.triggerMsg(&tr, "http://127.0.0.1:9999", "", ret)
	}
}

func BenchmarkTriggerMsgFmt(b *testing.B) {
	tr := trigger{job: triggerJob{RouteStrategy: xjob.RouteFirst, BlockStrategy: xjob.BlockSerialExecution, GlueType: xjob.GlueBean},
		task: fire.DispatchTask{Occurrence: fire.Occurrence{Type: xjob.TriggerCron}}, addrs: []string{"http://127.0.0.1:9999"}}
	ret := protocol.ReturnT{Code: 200}
	b.ReportAllocs()
	for b.Loop() {
		_ = triggerMsgFmt("", &tr, "http://127.0.0.1:9999", "", ret)
	}
}
