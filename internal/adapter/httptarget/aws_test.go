package httptarget

import (
	"strings"
	"testing"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/adapter/awstarget"
	"github.com/xjobdev/xjob/internal/target"
)

// TestAWSCallRefusedBeforeCalling: an AWS job fails at the trigger,
// without a call, when this node has no AWS client, when its ARN is no
// longer allowed (the operator removed it after the job was saved) or
// when its input renders to something the service cannot take.
func TestAWSCallRefusedBeforeCalling(t *testing.T) {
	t.Parallel()
	const allowed = "arn:aws:sqs:us-east-1:123456789012:jobs"
	al, err := target.ParseAllowList(allowed)
	if err != nil {
		t.Fatal(err)
	}
	withAWS := func(c *Config) { c.AWS, c.AWSAllow = awstarget.New(awstarget.Config{}), &al }
	tests := []struct {
		name   string
		tune   func(*Config)
		source string
		param  string
		want   string
	}{
		{"no client", nil, `{"arn":"` + allowed + `"}`, "p", "no AWS client"},
		{"removed from the list", withAWS, `{"arn":"arn:aws:sqs:us-east-1:123456789012:old"}`, "p", "no longer an allowed target ARN"},
		{"bad spec", withAWS, `{"arn":"` + allowed + `","url":"x"}`, "p", "AWS target spec"},
		{"input breaks JSON", func(c *Config) {
			fn := "arn:aws:lambda:us-east-1:123456789012:function:f"
			l, _ := target.ParseAllowList(fn)
			c.AWS, c.AWSAllow = awstarget.New(awstarget.Config{}), &l
		}, `{"arn":"arn:aws:lambda:us-east-1:123456789012:function:f","input":"{\"p\": \"{{param}}\"}"}`, `a "quote"`, "takes JSON"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t, loopback, tc.tune)
			ret := e.start(t, 1, tc.source, func(c *target.Call) { c.GlueType, c.Param = "AWS", tc.param })
			if ret.Code == xjob.CodeSuccess || !strings.Contains(ret.Msg, tc.want) {
				t.Fatalf("Start = %+v, want a failure with %q", ret, tc.want)
			}
			if e.exec.Busy(1) {
				t.Fatal("a refused call is queued")
			}
		})
	}
}
