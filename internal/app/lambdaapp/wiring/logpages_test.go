package wiring_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/xjobdev/xjob/internal/adapter/awsconfig"
	"github.com/xjobdev/xjob/internal/app/lambdaapp/wiring"
	"github.com/xjobdev/xjob/internal/testenv/emulator"
)

// XJOB_LOG_PAGES: one of 1, 2, 4, 8, 16, and a multiple of XJOB_SHARDS
// when that divides 16 (else buckets of different shards would write one
// page); every function reads it, and the store it opens uses it.
func TestLoadConfigLogPages(t *testing.T) {
	t.Parallel()
	tests := []struct {
		shards, pages string // "": unset
		want          int    // the store's LogPages; 0: refused
		mention       []string
	}{
		{"4", "", 16, nil},
		{"1", "1", 1, nil},
		{"1", "4", 4, nil},
		{"2", "2", 2, nil},
		{"4", "8", 8, nil},
		{"16", "16", 16, nil},
		{"3", "1", 1, nil}, // 3 does not divide 16: its buckets share pages whatever LogPages is
		{"32", "2", 2, nil},
		{"4", "1", 0, []string{"XJOB_LOG_PAGES=1", "XJOB_SHARDS=4"}},
		{"4", "2", 0, []string{"XJOB_LOG_PAGES=2", "XJOB_SHARDS=4"}},
		{"16", "8", 0, []string{"XJOB_LOG_PAGES=8", "XJOB_SHARDS=16"}},
		{"", "4", 0, []string{"XJOB_LOG_PAGES=4", "XJOB_SHARDS=16"}}, // unset shards mean 16
		{"1", "3", 0, []string{awsconfig.EnvLogPages}},
		{"1", "32", 0, []string{awsconfig.EnvLogPages}},
		{"1", "0", 0, []string{awsconfig.EnvLogPages}},
		{"1", "x", 0, []string{awsconfig.EnvLogPages}},
	}
	for _, f := range awsconfig.Functions { // every function opens the store
		if !slices.Contains(f.OptionalEnv, awsconfig.EnvLogPages) {
			t.Errorf("%s does not read %s", f.Name, awsconfig.EnvLogPages)
		}
	}
	for _, tt := range tests {
		t.Run(tt.shards+"/"+tt.pages, func(t *testing.T) {
			t.Parallel()
			env := map[string]string{awsconfig.EnvTablePrefix: emulator.UniqueName("pages"), awsconfig.EnvShards: tt.shards,
				awsconfig.EnvLogPages: tt.pages, awsconfig.EnvDispatchFastURL: "http://q/fast", awsconfig.EnvDispatchSlowURL: "http://q/slow",
				awsconfig.EnvAlarmTopicARN: "arn:aws:sns:x"}
			cfg, err := wiring.LoadConfig("registry", func(k string) string { return env[k] })
			if tt.want == 0 {
				if err == nil {
					t.Fatalf("accepted, want a refusal")
				}
				for _, m := range tt.mention {
					if !strings.Contains(err.Error(), m) {
						t.Fatalf("%v, want it to mention %q", err, m)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			b, err := wiring.NewBase(cfg, wiring.Deps{DynamoDB: emulator.DynamoDB(t), SQS: emulator.SQS(t)})
			if err != nil {
				t.Fatal(err)
			}
			if b.Store.LogPages() != tt.want {
				t.Fatalf("store LogPages %d, want %d", b.Store.LogPages(), tt.want)
			}
		})
	}
}
