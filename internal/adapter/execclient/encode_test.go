package execclient

import (
	"encoding/json"
	"testing"

	"github.com/xjobdev/xjob/pkg/protocol"
)

// The hand-written /run body is json.Marshal's, byte for byte.
func TestAppendTriggerParamMatchesMarshal(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		p    protocol.TriggerParam
	}{
		{"zero", protocol.TriggerParam{}},
		{"typical", protocol.TriggerParam{JobID: 42, ExecutorHandler: "demoJobHandler", ExecutorParams: "a=1&b=<2>",
			ExecutorBlockStrategy: "SERIAL_EXECUTION", ExecutorTimeout: 30, LogID: 1 << 40, LogDateTime: 1_800_000_000_123,
			GlueType: "BEAN", BroadcastIndex: 1, BroadcastTotal: 3}},
		{"glue script", protocol.TriggerParam{JobID: -1, GlueType: "GLUE_SHELL", GlueUpdatetime: -5, ExecutorTimeout: -1,
			GlueSource: "#!/bin/sh\necho \"hi\"\t\\ \b\f\r\x00\x1f\x7f é \u2028\u2029 😀 \xff\xfe bad \xe2\x80"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			want, err := json.Marshal(c.p)
			if err != nil {
				t.Fatal(err)
			}
			if got := appendTriggerParam(nil, c.p); string(got) != string(want) {
				t.Errorf("appendTriggerParam:\n got %s\nwant %s", got, want)
			}
		})
	}
}

func FuzzTriggerParamJSON(f *testing.F) {
	f.Add(int64(1), "demoJobHandler", "p", "SERIAL_EXECUTION", 10, int64(7), int64(1_800_000_000_000), "BEAN", "", int64(0), 0, 1)
	f.Add(int64(-3), "<h>&", "\u2028\xff\"\\\n", "", -1, int64(0), int64(-1), "GLUE_SHELL", "echo\x00\x7f é", int64(9), 2, 4)
	f.Fuzz(func(t *testing.T, job int64, handler, params, block string, timeout int, logID, logTime int64,
		glueType, glueSource string, glueAt int64, index, total int) {
		p := protocol.TriggerParam{JobID: job, ExecutorHandler: handler, ExecutorParams: params, ExecutorBlockStrategy: block,
			ExecutorTimeout: timeout, LogID: logID, LogDateTime: logTime, GlueType: glueType, GlueSource: glueSource,
			GlueUpdatetime: glueAt, BroadcastIndex: index, BroadcastTotal: total}
		want, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendTriggerParam(nil, p); string(got) != string(want) {
			t.Fatalf("appendTriggerParam:\n got %q\nwant %q", got, want)
		}
	})
}

func BenchmarkTriggerParamJSON(b *testing.B) {
	p := protocol.TriggerParam{JobID: 42, ExecutorHandler: "demoJobHandler", ExecutorBlockStrategy: "SERIAL_EXECUTION",
		LogID: 123456, LogDateTime: 1_800_000_000_123, GlueType: "BEAN"}
	b.Run("marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = json.Marshal(p)
		}
	})
	b.Run("append", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = appendTriggerParam(make([]byte, 0, 512), p)
		}
	})
	// pooled is Run's: the buffer of the last trigger, reused.
	b.Run("pooled", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			bp := bodies.Get().(*[]byte)
			recycleBody(bp, appendTriggerParam((*bp)[:0], p), true)
		}
	})
}
