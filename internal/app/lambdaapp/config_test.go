package lambdaapp_test

import (
	"maps"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xjobdev/xjob/internal/adapter/awsconfig"
	"github.com/xjobdev/xjob/internal/app/lambdaapp"
	"github.com/xjobdev/xjob/internal/web/auth"
)

func TestLoadConfig(t *testing.T) {
	t.Parallel()
	full := map[string]string{
		awsconfig.EnvTablePrefix: "p-", awsconfig.EnvShards: "8", awsconfig.EnvRingQueueURL: "http://q/ring",
		awsconfig.EnvDispatchFastURL: "http://q/fast", awsconfig.EnvDispatchSlowURL: "http://q/slow",
		awsconfig.EnvAccessToken: "a", awsconfig.EnvAdminToken: "b", awsconfig.EnvAlarmTopicARN: "arn:aws:sns:x",
	}
	with := func(k, v string) map[string]string {
		m := map[string]string{}
		for a, b := range full {
			m[a] = b
		}
		m[k] = v
		return m
	}
	tests := []struct {
		name, fn string
		env      map[string]string
		wantErr  string // substring; "" means success
	}{
		{"every function loads", "web", full, ""},
		{"missing prefix named", "scan", with(awsconfig.EnvTablePrefix, ""), awsconfig.EnvTablePrefix + " is required"},
		{"bad shards named", "ring", with(awsconfig.EnvShards, "x"), awsconfig.EnvShards},
		{"zero shards", "ring", with(awsconfig.EnvShards, "0"), awsconfig.EnvShards},
		{"bad log level named", "scan", with(awsconfig.EnvLogLevel, "loud"), awsconfig.EnvLogLevel},
		{"missing token of callback", "callback", with(awsconfig.EnvAccessToken, " "), awsconfig.EnvAccessToken},
		{"unknown function", "nope", full, "unknown function"},
		{"retry delay out of range", "callback", with(awsconfig.EnvRetryDelay, "1h"), awsconfig.EnvRetryDelay},
		{"retry delay not a duration", "dispatch", with(awsconfig.EnvRetryDelay, "soon"), awsconfig.EnvRetryDelay},
		{"retry backoff below 1", "registry", with(awsconfig.EnvRetryBackoff, "0.5"), awsconfig.EnvRetryBackoff},
		{"bad allow-any-trigger-address named", "dispatch", with(awsconfig.EnvAnyTriggerAddress, "yes please"), awsconfig.EnvAnyTriggerAddress},
		{"scan advance below the horizon", "scan", with(awsconfig.EnvScanAdvance, "60s"), awsconfig.EnvScanAdvance},
		{"scan advance past the SQS delay limit", "scan", with(awsconfig.EnvScanAdvance, "15m"), awsconfig.EnvScanAdvance},
		{"scan advance not a duration", "scan", with(awsconfig.EnvScanAdvance, "often"), awsconfig.EnvScanAdvance},
		{"scan advance in range", "scan", with(awsconfig.EnvScanAdvance, "10m"), ""},
		{"target ARN wildcard refused", "dispatch", with(awsconfig.EnvAWSTargetARNs, "arn:aws:sqs:us-east-1:123456789012:*"), awsconfig.EnvAWSTargetARNs},
		{"target ARN of another service refused", "web", with(awsconfig.EnvAWSTargetARNs, "arn:aws:s3:::bucket"), awsconfig.EnvAWSTargetARNs},
		{"target ARNs listed", "ring", with(awsconfig.EnvAWSTargetARNs,
			"arn:aws:sqs:us-east-1:123456789012:jobs,arn:aws:lambda:us-east-1:123456789012:function:report:live"), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := lambdaapp.LoadConfig(tt.fn, func(k string) string { return tt.env[k] })
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("LoadConfig: %v", err)
				}
				if cfg.Shards != 8 || cfg.TablePrefix != "p-" || (tt.fn != "scan" && cfg.AdminToken != "b") {
					t.Errorf("config %+v", cfg)
				}
				if v := tt.env[awsconfig.EnvScanAdvance]; v != "" && cfg.ScanAdvance.String() != "10m0s" {
					t.Errorf("scan advance %s from %q", cfg.ScanAdvance, v)
				}
				if v := tt.env[awsconfig.EnvAWSTargetARNs]; v != "" && (cfg.AWSTargets.Len() != 2 ||
					!cfg.AWSTargets.Allows("arn:aws:lambda:us-east-1:123456789012:function:report:live")) {
					t.Errorf("target ARNs %v from %q", cfg.AWSTargets.ARNs(), v)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v, want it to mention %q", err, tt.wantErr)
			}
		})
	}
	// The retry settings reach the functions that complete failures.
	retry := with(awsconfig.EnvRetryDelay, "2s")
	retry[awsconfig.EnvRetryBackoff] = "1.5"
	for _, fn := range []string{"dispatch", "callback", "registry"} {
		cfg, err := lambdaapp.LoadConfig(fn, func(k string) string { return retry[k] })
		if err != nil || cfg.RetryDelay.String() != "2s" || cfg.RetryBackoff != 1.5 {
			t.Errorf("%s: retry %s ×%g, %v", fn, cfg.RetryDelay, cfg.RetryBackoff, err)
		}
	}
	// A variable that is not the function's own is ignored.
	cfg, err := lambdaapp.LoadConfig("scan", func(k string) string { return full[k] })
	if err != nil || cfg.AdminToken != "" || cfg.AccessToken != "" {
		t.Errorf("scan config %+v %v: foreign variables leaked in", cfg, err)
	}
}

func TestLoadConfigAnyTriggerAddress(t *testing.T) {
	t.Parallel()
	env := map[string]string{
		awsconfig.EnvTablePrefix: "p-", awsconfig.EnvShards: "8",
		awsconfig.EnvDispatchFastURL: "http://q/fast", awsconfig.EnvDispatchSlowURL: "http://q/slow",
		awsconfig.EnvAccessToken: "a", awsconfig.EnvAdminToken: "b", awsconfig.EnvAlarmTopicARN: "arn:aws:sns:x",
	}
	get := func(k string) string { return env[k] }
	cfg, err := lambdaapp.LoadConfig("dispatch", get)
	if err != nil || cfg.AnyTriggerAddress {
		t.Fatalf("default: %+v %v, want overrides restricted", cfg, err)
	}
	env[awsconfig.EnvAnyTriggerAddress] = "true"
	if cfg, err = lambdaapp.LoadConfig("dispatch", get); err != nil || !cfg.AnyTriggerAddress {
		t.Fatalf("set: %+v %v", cfg, err)
	}
}

// TestLoadConfigSecretParams: on AWS the functions get the names of the
// SSM parameters holding the tokens, never the tokens; web needs all
// three, the executor-facing functions the access token's only.
func TestLoadConfigSecretParams(t *testing.T) {
	t.Parallel()
	env := map[string]string{
		awsconfig.EnvTablePrefix: "p-", awsconfig.EnvShards: "8", awsconfig.EnvRingQueueURL: "http://q/ring",
		awsconfig.EnvDispatchFastURL: "http://q/fast", awsconfig.EnvDispatchSlowURL: "http://q/slow",
		awsconfig.EnvAlarmTopicARN: "arn:aws:sns:x", awsconfig.EnvAccessTokenParam: "/x/access",
		awsconfig.EnvAdminTokenParam: "/x/admin", awsconfig.EnvSessionKeyParam: "/x/session", awsconfig.EnvSecretsRefresh: "1m",
	}
	cfg, err := lambdaapp.LoadConfig("web", func(k string) string { return env[k] })
	if err != nil || cfg.AccessTokenParam != "/x/access" || cfg.AdminTokenParam != "/x/admin" || cfg.SessionKeyParam != "/x/session" ||
		cfg.SecretsRefresh != time.Minute || cfg.AccessToken != "" {
		t.Fatalf("web: %+v %v", cfg, err)
	}
	cfg, err = lambdaapp.LoadConfig("callback", func(k string) string { return env[k] })
	if err != nil || cfg.AccessTokenParam != "/x/access" || cfg.AdminTokenParam != "" || cfg.SessionKeyParam != "" {
		t.Fatalf("callback: %+v %v, want the access token's parameter only", cfg, err)
	}
	// The dispatchers open HTTP jobs' secret headers: the session key's too.
	for _, fn := range []string{"ring", "dispatch"} {
		cfg, err = lambdaapp.LoadConfig(fn, func(k string) string { return env[k] })
		if err != nil || cfg.AccessTokenParam != "/x/access" || cfg.AdminTokenParam != "" || cfg.SessionKeyParam != "/x/session" {
			t.Fatalf("%s: %+v %v, want the access token's and the session key's parameters", fn, cfg, err)
		}
	}
	delete(env, awsconfig.EnvSessionKeyParam)
	if _, err := lambdaapp.LoadConfig("web", func(k string) string { return env[k] }); err == nil ||
		!strings.Contains(err.Error(), awsconfig.EnvSessionKeyParam) {
		t.Errorf("web without a session key parameter: %v, want it named", err)
	}
	env[awsconfig.EnvSecretsRefresh] = "2h"
	if _, err := lambdaapp.LoadConfig("callback", func(k string) string { return env[k] }); err == nil ||
		!strings.Contains(err.Error(), awsconfig.EnvSecretsRefresh) {
		t.Errorf("refresh of 2h: %v, want it refused", err)
	}
}

// TestLoadConfigAddressRuleAndGlue: the executor address rule and the GLUE
// policy are deployment settings. Loopback is refused unless the operator
// allows it, a malformed range list stops the function with the variable
// named, and the GLUE policy takes exactly what package auth takes.
func TestLoadConfigAddressRuleAndGlue(t *testing.T) {
	t.Parallel()
	base := map[string]string{
		awsconfig.EnvTablePrefix: "p-", awsconfig.EnvShards: "8", awsconfig.EnvRingQueueURL: "http://q/ring",
		awsconfig.EnvDispatchFastURL: "http://q/fast", awsconfig.EnvDispatchSlowURL: "http://q/slow",
		awsconfig.EnvAccessToken: "a", awsconfig.EnvAdminToken: "b", awsconfig.EnvAlarmTopicARN: "arn:aws:sns:x",
	}
	tests := []struct {
		name, fn string
		env      map[string]string
		wantErr  string   // substring; "" means success
		refused  []string // addresses the loaded rule refuses
		allowed  []string // and allows
		glue     string
	}{
		{name: "default refuses loopback", fn: "registry",
			refused: []string{"127.0.0.1", "::1", "169.254.169.254"}, allowed: []string{"10.0.0.5", "192.168.1.2"}},
		{name: "operator allows loopback", fn: "dispatch", env: map[string]string{awsconfig.EnvAllowCIDRs: "127.0.0.0/8,::1/128"},
			allowed: []string{"127.0.0.1", "::1", "10.0.0.5"}, refused: []string{"169.254.169.254"}},
		{name: "operator denies a private range", fn: "ring", env: map[string]string{awsconfig.EnvDenyCIDRs: "10.0.0.0/8,fd00::/8"},
			refused: []string{"10.1.2.3", "fd00::1"}, allowed: []string{"172.16.0.1"}},
		{name: "single addresses", fn: "web", env: map[string]string{awsconfig.EnvAllowCIDRs: "169.254.10.1", awsconfig.EnvDenyCIDRs: "192.168.1.2"},
			allowed: []string{"169.254.10.1"}, refused: []string{"169.254.10.2", "192.168.1.2"}},
		{name: "range list with spaces", fn: "registry", env: map[string]string{awsconfig.EnvAllowCIDRs: "10.0.0.0/8, 172.16.0.0/12"},
			wantErr: awsconfig.EnvAllowCIDRs},
		{name: "not a range", fn: "dispatch", env: map[string]string{awsconfig.EnvDenyCIDRs: "10.0.0.0/33"}, wantErr: awsconfig.EnvDenyCIDRs},
		{name: "a host name", fn: "web", env: map[string]string{awsconfig.EnvDenyCIDRs: "metadata.internal"}, wantErr: awsconfig.EnvDenyCIDRs},
		{name: "the executor API checks registrations", fn: "callback", env: map[string]string{awsconfig.EnvAllowCIDRs: "127.0.0.0/8"},
			allowed: []string{"127.0.0.1"}, refused: []string{"169.254.169.254"}},
		{name: "scan does not read the rule", fn: "scan", env: map[string]string{awsconfig.EnvAllowCIDRs: "127.0.0.0/8"},
			refused: []string{"127.0.0.1"}},
		{name: "web address not a URL", fn: "callback", env: map[string]string{awsconfig.EnvWebURL: "api.example.com"}, wantErr: awsconfig.EnvWebURL},
		{name: "web address with a query", fn: "callback", env: map[string]string{awsconfig.EnvWebURL: "https://api.example.com/?a=1"}, wantErr: awsconfig.EnvWebURL},
		{name: "GLUE admins by default", fn: "web", glue: "admins"},
		{name: "GLUE everyone", fn: "web", env: map[string]string{awsconfig.EnvGluePolicy: "everyone"}, glue: "everyone"},
		{name: "GLUE off", fn: "web", env: map[string]string{awsconfig.EnvGluePolicy: "off"}, glue: "off"},
		{name: "GLUE unknown", fn: "web", env: map[string]string{awsconfig.EnvGluePolicy: "nobody"}, wantErr: awsconfig.EnvGluePolicy},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env := maps.Clone(base)
			maps.Copy(env, tt.env)
			cfg, err := lambdaapp.LoadConfig(tt.fn, func(k string) string { return env[k] })
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want it to name %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("LoadConfig: %v", err)
			}
			for _, a := range tt.refused {
				if cfg.Egress.CheckIP(netip.MustParseAddr(a)) == nil {
					t.Errorf("%s allowed", a)
				}
			}
			for _, a := range tt.allowed {
				if err := cfg.Egress.CheckIP(netip.MustParseAddr(a)); err != nil {
					t.Errorf("%s: %v", a, err)
				}
			}
			if tt.glue != "" && cfg.GluePolicy != tt.glue {
				t.Errorf("GLUE policy %q, want %q", cfg.GluePolicy, tt.glue)
			}
		})
	}
	// Per-job metrics: a count within AWS's bound (each is a billed
	// custom metric), read by the functions that record results.
	for _, tc := range []struct {
		fn, v   string
		want    int
		wantErr bool
	}{{"callback", "", 0, false}, {"callback", "10", 10, false}, {"dispatch", "25", 25, false},
		{"web", "26", 0, true}, {"dispatch", "1000", 0, true}, {"registry", "-1", 0, true}, {"callback", "ten", 0, true}} {
		env := maps.Clone(base)
		env[awsconfig.EnvMetricsPerJob] = tc.v
		cfg, err := lambdaapp.LoadConfig(tc.fn, func(k string) string { return env[k] })
		if tc.wantErr != (err != nil) || tc.wantErr && !strings.Contains(err.Error(), awsconfig.EnvMetricsPerJob) || cfg.MetricsPerJob != tc.want {
			t.Errorf("%s %s=%q: %d, %v; want %d (error: %v)", tc.fn, awsconfig.EnvMetricsPerJob, tc.v, cfg.MetricsPerJob, err, tc.want, tc.wantErr)
		}
	}
	// Custom metrics: off unless the stack says true, read by every
	// function (each writes EMF records); only the templates' spellings.
	for _, tc := range []struct {
		fn, v   string
		want    bool
		wantErr bool
	}{{"scan", "", false, false}, {"ring", "false", false, false}, {"ring", "true", true, false}, {"callback", "true", true, false},
		{"web", "true", true, false}, {"registry", "true", true, false}, {"dispatch", "true", true, false},
		{"ring", "TRUE", false, true}, {"scan", "1", false, true}, {"callback", "yes", false, true}} {
		env := maps.Clone(base)
		env[awsconfig.EnvCustomMetrics] = tc.v
		cfg, err := lambdaapp.LoadConfig(tc.fn, func(k string) string { return env[k] })
		if tc.wantErr != (err != nil) || tc.wantErr && !strings.Contains(err.Error(), awsconfig.EnvCustomMetrics) || cfg.CustomMetrics != tc.want {
			t.Errorf("%s %s=%q: %v, %v; want %v (error: %v)", tc.fn, awsconfig.EnvCustomMetrics, tc.v, cfg.CustomMetrics, err, tc.want, tc.wantErr)
		}
	}
	// Ring lead: whole milliseconds from 50 to 1000, read by the scan and
	// web functions (the ring only waits for what the scan sent).
	for _, tc := range []struct {
		fn, v   string
		want    time.Duration
		wantErr bool
	}{{"scan", "", 0, false}, {"scan", "100ms", 100 * time.Millisecond, false}, {"web", "50ms", 50 * time.Millisecond, false},
		{"scan", "1000ms", time.Second, false}, {"ring", "100ms", 0, false}, {"scan", "49ms", 0, true}, {"scan", "1001ms", 0, true},
		{"scan", "0.1s", 0, true}, {"web", "100", 0, true}, {"scan", "050ms", 0, true}} {
		env := maps.Clone(base)
		env[awsconfig.EnvRingLead] = tc.v
		cfg, err := lambdaapp.LoadConfig(tc.fn, func(k string) string { return env[k] })
		if tc.wantErr != (err != nil) || tc.wantErr && !strings.Contains(err.Error(), awsconfig.EnvRingLead) || cfg.RingLead != tc.want {
			t.Errorf("%s %s=%q: %v, %v; want %v (error: %v)", tc.fn, awsconfig.EnvRingLead, tc.v, cfg.RingLead, err, tc.want, tc.wantErr)
		}
	}
	// Log retention: whole days from xxl-job's minimum to ten years, read
	// by every function that reads or writes logs (the scan does neither).
	for _, tc := range []struct {
		fn, v   string
		want    time.Duration
		wantErr bool
	}{{"web", "", 0, false}, {"registry", "7", 7 * 24 * time.Hour, false}, {"callback", "3650", 3650 * 24 * time.Hour, false},
		{"dispatch", "90", 90 * 24 * time.Hour, false}, {"ring", "30", 30 * 24 * time.Hour, false}, {"scan", "30", 0, false},
		{"web", "6", 0, true}, {"web", "3651", 0, true}, {"web", "-1", 0, true}, {"web", "030", 0, true}, {"web", "+30", 0, true},
		{"web", "7.5", 0, true}, {"web", "30d", 0, true}} {
		env := maps.Clone(base)
		env[awsconfig.EnvLogRetentionDays] = tc.v
		cfg, err := lambdaapp.LoadConfig(tc.fn, func(k string) string { return env[k] })
		if tc.wantErr != (err != nil) || tc.wantErr && !strings.Contains(err.Error(), awsconfig.EnvLogRetentionDays) || cfg.LogRetention != tc.want {
			t.Errorf("%s %s=%q: %v, %v; want %v (error: %v)", tc.fn, awsconfig.EnvLogRetentionDays, tc.v, cfg.LogRetention, err, tc.want, tc.wantErr)
		}
	}
	// The functions' list of GLUE policies is package auth's.
	for _, p := range append(slices.Clone(awsconfig.GluePolicies), "nobody", "ADMINS") {
		_, authErr := auth.ParseGluePolicy(p)
		if slices.Contains(awsconfig.GluePolicies, p) != (authErr == nil) {
			t.Errorf("GLUE policy %q: awsconfig lists it %v, auth.ParseGluePolicy: %v", p, slices.Contains(awsconfig.GluePolicies, p), authErr)
		}
	}
}
