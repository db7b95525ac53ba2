package executor

import (
	"testing"

	"github.com/xjobdev/xjob/pkg/protocol"
)

// FuzzTriggerParam decodes arbitrary /run bodies as the SDK does: an error
// or a TriggerParam, never a panic.
func FuzzTriggerParam(f *testing.F) {
	for _, s := range []string{
		`{"jobId":1,"executorHandler":"demo","executorParams":"x","executorBlockStrategy":"SERIAL_EXECUTION","executorTimeout":0,"logId":7,"logDateTime":1,"glueType":"BEAN","glueSource":"","glueUpdatetime":1,"broadcastIndex":0,"broadcastTotal":1}`,
		`{"jobId":"1"}`, `{"jobId":1e99}`, `[]`, `null`, `{"glueType":"GLUE_SHELL","glueSource":"echo \u0000"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var p protocol.TriggerParam
		_ = decode(body, &p)
	})
}
