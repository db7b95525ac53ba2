package wiring_test

import (
	"io"
	"testing"
	"time"

	"github.com/xjobdev/xjob/internal/adapter/awsconfig"
	"github.com/xjobdev/xjob/internal/app/lambdaapp/wiring"
	"github.com/xjobdev/xjob/internal/testenv/emulator"
	"github.com/xjobdev/xjob/pkg/clock"
)

// The deployment's log retention reaches the store of every function that
// reads or writes logs: its LogTTL is what the logs' TTL attribute and
// every reader's expiry follow. Unset, the store keeps its default.
func TestLogRetentionReachesStore(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		days string
		want time.Duration
	}{{"", awsconfig.DefaultLogRetentionDays * 24 * time.Hour}, {"7", 7 * 24 * time.Hour}, {"400", 400 * 24 * time.Hour}} {
		env := map[string]string{awsconfig.EnvTablePrefix: emulator.UniqueName("ret"), awsconfig.EnvShards: "4",
			awsconfig.EnvDispatchFastURL: "http://q/fast", awsconfig.EnvDispatchSlowURL: "http://q/slow",
			awsconfig.EnvAlarmTopicARN: "arn:aws:sns:x", awsconfig.EnvLogRetentionDays: tc.days}
		cfg, err := wiring.LoadConfig("registry", func(k string) string { return env[k] })
		if err != nil {
			t.Fatal(err)
		}
		b, err := wiring.NewBase(cfg, wiring.Deps{DynamoDB: emulator.DynamoDB(t), SQS: emulator.SQS(t),
			Clock: clock.NewFake(time.UnixMilli(1_700_000_000_000)), MetricsOut: io.Discard})
		if err != nil {
			t.Fatal(err)
		}
		if got := b.Store.LogExpiry(); got != tc.want {
			t.Errorf("%s=%q: store retention %v, want %v", awsconfig.EnvLogRetentionDays, tc.days, got, tc.want)
		}
	}
}
