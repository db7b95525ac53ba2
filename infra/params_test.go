package infra

import (
	"maps"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/xjobdev/xjob/internal/adapter/awsconfig"
	"github.com/xjobdev/xjob/internal/app/lambdaapp/wiring"
)

// paramValues are the values each checked variable is tried with: the
// bounds of the code's range, just past them, and malformed ones.
var paramValues = map[string][]string{
	awsconfig.EnvRetryDelay: {"50ms", "99ms", "100ms", "999ms", "5s", "90s", "900s", "901s", "1m", "15m", "16m", "1h",
		"900000ms", "900001ms", "0s", "soon"},
	awsconfig.EnvScanAdvance:            {"60s", "149s", "150s", "300s", "840s", "841s", "2m", "3m", "10m", "14m", "15m", "1h", "often"},
	awsconfig.EnvSecretsRefresh:         {"0s", "1s", "59s", "3600s", "3601s", "1m", "60m", "61m", "1h", "2h", "5"},
	awsconfig.EnvRetryBackoff:           {"0", "0.5", "1", "1.5", "2", "9.99", "10", "10.0", "10.5", "11", "x"},
	awsconfig.EnvLogLevel:               {"debug", "info", "warn", "error", "loud"},
	awsconfig.EnvShards:                 {"0", "1", "16", "1024", "4096", "4097"},
	awsconfig.EnvLogPages:               {"0", "1", "2", "3", "4", "8", "12", "16", "32", "-16", "x"},
	awsconfig.EnvTableBillingMode:       {"PAY_PER_REQUEST", "PROVISIONED", "provisioned", "ON_DEMAND"},
	awsconfig.EnvTableCapacityMin:       {"0", "0.5", "1", "4000", "40000", "40001", "-1", "x"},
	awsconfig.EnvTableCapacityMax:       {"0", "1", "4000", "40000", "40001", "x"},
	awsconfig.EnvTableTargetUtilization: {"19", "20", "70", "90", "91", "70.5", "x"},
	awsconfig.EnvAllowCIDRs:             cidrValues,
	awsconfig.EnvDenyCIDRs:              cidrValues,
	awsconfig.EnvGluePolicy:             {"admins", "everyone", "off", "ADMINS", "none"},
	awsconfig.EnvCustomMetrics:          {"false", "true", "TRUE", "True", "1", "0", "yes", "on"},
	awsconfig.EnvRingLead: {"0ms", "9ms", "49ms", "50ms", "99ms", "100ms", "150ms", "250ms", "999ms", "1000ms", "1001ms", "1s", "0.1s",
		"100", "050ms", "100 ms", "-100ms", "soon"},
	awsconfig.EnvAWSTargetARNs: arnValues,
	awsconfig.EnvLogRetentionDays: {"-1", "0", "1", "6", "7", "9", "10", "30", "99", "100", "999", "1000", "2999", "3000",
		"3599", "3600", "3649", "3650", "3651", "3700", "4000", "9999", "10000", "007", "+30", "30.0", "7.5", "1e3", "30d", "month"},
}

// cidrValues are tried on both range lists: one and several ranges, bare
// addresses, IPv6 spellings, and what the functions refuse (spaces, bits
// out of range, octets past 255, leading zeros, names, zones, embedded IPv4).
var cidrValues = []string{"", "10.0.0.0/8", "10.0.0.0/8,172.16.0.0/12,192.168.0.0/16", "127.0.0.1", "127.0.0.0/8,::1/128",
	"0.0.0.0/0", "255.255.255.255/32", "10.0.0.0/33", "256.0.0.0/8", "10.0.0/8", "010.0.0.0/8", "10.0.0.0/08",
	"10.0.0.0/8, 10.1.0.0/16", "10.0.0.0/8,", ",10.0.0.0/8", "metadata.internal", "::", "::/0", "fd00::/8", "fd00:ec2::254",
	"2001:db8::/32", "2001:DB8:0:0:0:0:0:1/128", "1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7::", "1::8", "1:2:3:4:5:6:7:8:9", "1:::2",
	"fe80::1%eth0", "::ffff:10.0.0.1", "fd00::/129", "12345::/16", "x"}

// arnValues are tried on the AWS target ARN list: one and several ARNs
// of each service, qualified functions, FIFO queues, other partitions,
// and what the functions refuse (wildcards, spaces, empty items, other
// services, short accounts, missing regions, bare names).
var arnValues = []string{"", "arn:aws:sqs:us-east-1:123456789012:jobs", "arn:aws:sqs:us-east-1:123456789012:jobs.fifo",
	"arn:aws:lambda:eu-west-1:123456789012:function:fn", "arn:aws:lambda:eu-west-1:123456789012:function:fn:live",
	"arn:aws:lambda:eu-west-1:123456789012:function:fn:$LATEST",
	"arn:aws:sns:us-east-1:123456789012:topic,arn:aws:events:us-east-1:123456789012:event-bus/default",
	"arn:aws:states:us-east-1:123456789012:stateMachine:flow", "arn:aws-cn:sqs:cn-north-1:123456789012:q",
	"arn:aws-us-gov:sns:us-gov-west-1:123456789012:t",
	"*", "arn:aws:sqs:us-east-1:123456789012:*", "arn:aws:sqs:*:123456789012:jobs", "arn:aws:lambda:us-east-1:123456789012:function:*",
	"arn:aws:sqs:us-east-1:123456789012:jobs, arn:aws:sqs:us-east-1:123456789012:other", "arn:aws:sqs:us-east-1:123456789012:jobs,",
	",arn:aws:sqs:us-east-1:123456789012:jobs", "arn:aws:s3:::bucket", "arn:aws:dynamodb:us-east-1:123456789012:table/t",
	"arn:aws:sqs:us-east-1:12345:jobs", "arn:aws:sqs::123456789012:jobs", "arn:aws:lambda:us-east-1:123456789012:fn",
	"arn:aws:events:us-east-1:123456789012:rule/r", "arn:aws:states:us-east-1:123456789012:execution:flow:x", "jobs", "x"}

// TestParamsMatchConfig: a parameter value the deployment accepts is one
// the functions accept, and the other way round, for every variable whose
// value the code checks: a value that passes the template but fails the
// code's check would make every invocation fail instead of the deploy.
func TestParamsMatchConfig(t *testing.T) {
	t.Parallel()
	sam, tf := loadStacks(t)
	for _, s := range []*stack{sam, tf} {
		for _, env := range slices.Sorted(maps.Keys(paramValues)) {
			p, ok := s.params[envSymbol[env][len("param:"):]]
			if !ok {
				t.Errorf("%s: no parameter for %s (%s)", s.format, env, envSymbol[env])
				continue
			}
			for _, v := range paramValues[env] {
				deploy := p.accepts(v)
				code := codeAccepts(t, env, v)
				if deploy != code {
					t.Errorf("%s: %s=%q: the deployment accepts it %v, the functions %v (pattern %q, allowed %v)",
						s.format, env, v, deploy, code, p.pattern, p.allowed)
				}
			}
		}
	}
}

// accepts says whether a deploy takes v for the parameter.
func (p param) accepts(v string) bool {
	if p.pattern != "" {
		re, err := regexp.Compile(p.pattern)
		if err != nil || !re.MatchString(v) {
			return false
		}
	}
	if p.allowed != nil && !slices.Contains(p.allowed, v) {
		return false
	}
	if p.min != nil || p.max != nil || p.whole {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || p.min != nil && f < *p.min || p.max != nil && f > *p.max || p.whole && f != math.Trunc(f) {
			return false
		}
	}
	return true
}

// codeAccepts loads the configuration of a function that reads env, with
// every variable it requires set, and env set to v.
func codeAccepts(t *testing.T, env, v string) bool {
	t.Helper()
	for _, f := range awsconfig.Functions {
		if !slices.Contains(f.Env, env) && !slices.Contains(f.OptionalEnv, env) {
			continue
		}
		vars := map[string]string{awsconfig.EnvShards: "4", awsconfig.EnvDispatchFunction: "x", awsconfig.EnvRingQueueURL: "x"}
		if env == awsconfig.EnvLogPages {
			// One shard: LogPages alone (its rule with Shards is
			// TestLogPagesCoverShards').
			vars[awsconfig.EnvShards] = "1"
		}
		for _, e := range f.Env {
			if _, ok := vars[e]; !ok {
				vars[e] = "x"
			}
		}
		vars[env] = v
		_, err := wiring.LoadConfig(f.Name, func(k string) string { return vars[k] })
		return err == nil
	}
	t.Fatalf("no function reads %s", env)
	return false
}

// TestRingMemorySize: the ring's memory parameter defaults to the size
// every function had before it (no change for a deployed stack), and SAM
// and Terraform accept the same sizes, whole MB from 128 to 3008, so a
// size one format takes is never refused by the other or by Lambda at
// the update.
func TestRingMemorySize(t *testing.T) {
	t.Parallel()
	sam, tf := loadStacks(t)
	name := ringMemoryParam[len("param:"):]
	for _, s := range []*stack{sam, tf} {
		p, ok := s.params[name]
		if !ok {
			t.Fatalf("%s: no %s parameter", s.format, ringMemoryParam)
		}
		if mb, ok := intOf(p.def); !ok || mb != functionMemoryMB {
			t.Errorf("%s: %s defaults to %v, want %d (the other functions' size)", s.format, name, p.def, functionMemoryMB)
		}
	}
	// Referenced once in each format: the ring's memory and nothing else
	// (checkFunctions checks that it is the ring's).
	for file, ref := range map[string]string{"sam/template.yaml": "!Ref RingMemorySize", "terraform/lambda.tf": "var.ring_memory_size"} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(b), ref); n != 1 {
			t.Errorf("%s: %q %d times, want once (the ring function's memory only)", file, ref, n)
		}
	}
	// make deploy-sam / deploy-tf pass RING_MEMORY, by default the
	// parameter's default.
	mk, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	if m := regexp.MustCompile(`(?m)^RING_MEMORY \?= (\d+)$`).FindSubmatch(mk); m == nil || string(m[1]) != strconv.Itoa(functionMemoryMB) {
		t.Errorf("Makefile: RING_MEMORY default %q, want %d", m, functionMemoryMB)
	}
	for _, pass := range []string{"RingMemorySize=$(RING_MEMORY)", "-var ring_memory_size=$(RING_MEMORY)"} {
		if !strings.Contains(string(mk), pass) {
			t.Errorf("Makefile: no %s: make deploy-* would deploy the ring at the parameter's default whatever RING_MEMORY says", pass)
		}
	}
	tests := []struct {
		v    string
		want bool
	}{
		{"0", false}, {"-256", false}, {"64", false}, {"127", false}, {"128", true}, {"129", true}, {"199", true},
		{"256", true}, {"512", true}, {"999", true}, {"1000", true}, {"1024", true}, {"1769", true}, {"2999", true},
		{"3000", true}, {"3008", true}, {"3009", false}, {"3010", false}, {"4096", false}, {"10240", false},
		{"256.5", false}, {"1024.25", false}, {"", false}, {"x", false}, {"256MB", false}, {"1 GB", false},
	}
	for _, tt := range tests {
		t.Run(tt.v, func(t *testing.T) {
			t.Parallel()
			for _, s := range []*stack{sam, tf} {
				if p := s.params[name]; p.accepts(tt.v) != tt.want {
					t.Errorf("%s: %s=%q accepted %v, want %v (pattern %q, range %v..%v, whole %v)",
						s.format, name, tt.v, !tt.want, tt.want, p.pattern, deref(p.min), deref(p.max), p.whole)
				}
			}
		})
	}
}

// deref is *f for a message, nil as "-".
func deref(f *float64) any {
	if f == nil {
		return "-"
	}
	return *f
}

// loadStacks loads the SAM template and the Terraform module, the two
// deployments every parity test compares.
func loadStacks(t *testing.T) (sam, tf *stack) {
	t.Helper()
	sam, err := loadSAM("sam/template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if tf, err = loadTerraform("terraform"); err != nil {
		t.Fatal(err)
	}
	return sam, tf
}
