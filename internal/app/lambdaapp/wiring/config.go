package wiring

import (
	"fmt"
	"log/slog"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/xjobdev/xjob/internal/adapter/awsconfig"
	"github.com/xjobdev/xjob/internal/adapter/dynamostore"
	"github.com/xjobdev/xjob/internal/egress"
	"github.com/xjobdev/xjob/internal/scheduler/callback"
	"github.com/xjobdev/xjob/internal/target"
)

// ScanHorizon is how far ahead the scan function pre-reads. It runs once
// a minute (EventBridge), not in a resident per-second loop, so it must
// reach past the next invocation: 150 s covers the next minute, the
// schedule's jitter, and one invocation lost altogether (no asynchronous
// retries), with every bucket's SQS delay well inside the 900 s limit.
// A due job's fires are planned further, DefaultScanAdvance. Fires of
// jobs created, started or rescheduled in between are pushed by the admin
// (admin, through scan.Pusher); the ring drops occurrences whose schedule revision
// changed since they were pushed.
const ScanHorizon = 150 * time.Second

// RingWindow is how much earlier than the scan's ring lead a ring bucket
// may become visible when the scan sends it in phase (sqsqueue.Pacing):
// SQS delays are whole seconds, and the scan waits, once per page of due
// jobs, for the millisecond at which a whole-second delay lands a bucket
// between lead + RingWindow and lead before its second.
const RingWindow = 100 * time.Millisecond

// DefaultScanAdvance is how far ahead the scan plans the fires of a job it
// reads due (scan.Tunables.Advance; XJOB_SCAN_ADVANCE). The job is then due
// again only when its first unplanned fire comes within ScanHorizon, so
// it is read and advanced (one write unit plus two on the due index) about
// once per DefaultScanAdvance − ScanHorizon ≈ 11.5 minutes instead of every
// minute: for a job that fires every minute that is one advance per ~11
// fires instead of one per fire. Edits stay correct as with any horizon:
// a stop, delete or reschedule bumps the job's revision and the ring
// drops the occurrences planned under the old one. The cost is more ring
// messages per second (each tick's advanced jobs fill buckets up to 14
// minutes out, so a shard-second's fires arrive in several messages), a
// few cents per million triggers.
const DefaultScanAdvance = 14 * time.Minute

// DefaultScanAdvanceRate caps each shard's advances a second (the scan's
// scan.Tunables.AdvanceRate). Each advance rewrites the job's entry in the
// due index, whose partition key is the job's shard: a delete and a put,
// 2 write units for an entry under 1 KB. 180 a second is 360 units a
// second on that key, at most 396 in any one-second window (the scan
// writes chunks of 18 every 100 ms), under DynamoDB's 1,000 per key with
// room for the key's other writes (creates, starts, stops, edits). Within
// the scan's 20 s budget a tick advances up to 3,600 jobs per shard: a bulk
// start of 14,400 jobs on the default 4 shards is planned in the first
// minute, a larger one over the next ticks. In the steady state a job is
// advanced once per scan advance minus horizon (about 11.5 minutes), the
// jobs of one of the scan's 16 plan grids (43 s apart) in the same tick, at
// least 90 s before their next fire, so a second tick can still finish a
// grid in time: up to about 7,200 jobs a grid, 115,000 every-second jobs
// in all. Larger entries (GLUE source, long params under the ALL
// projection) cost more units per advance.
const DefaultScanAdvanceRate = 180

// DefaultRingLead is how long before its second a ring bucket is visible
// at the latest (scan.Tunables.RingLead; XJOB_RING_LEAD). The ring queue
// is paced (sqsqueue.Pacing): the scan waits for the millisecond phase at
// which SQS's whole-second delay makes a bucket visible between the lead
// + RingWindow and the lead before its second, so the ring function waits
// about that long for the instant — billed — rather than anywhere up to a
// second. The lead covers the mapping's delivery and the ring's
// preparation (the bucket's job reads and claims ahead), so that at the
// instant only the executor calls remain; AWS documents no bound for an
// SQS delay or a mapping's delivery, so a lead shorter than what they
// take makes every fire of a late bucket late by as much. 100 ms held
// the lateness targets at 1,000 fires a second on the emulated stack
// (docs/cost.md, the ring lead), where the ring's wait is most of what
// a sparse schedule pays for Lambda; an operator who sees late buckets
// raises it with the stack's RingLead.
const DefaultRingLead = 100 * time.Millisecond

// The range of XJOB_RING_LEAD (awsconfig.RingLeadPattern).
const (
	MinRingLead = 50 * time.Millisecond
	MaxRingLead = time.Second
)

// MaxScanAdvance keeps every bucket's SQS delay under SQS's 900 s ceiling
// (sqsqueue caps DelaySeconds there: a later bucket would come too early
// and hold a ring invocation).
const MaxScanAdvance = 14 * time.Minute

// The range of XJOB_SECRETS_REFRESH: often enough that a rotation ends
// within the hour, seldom enough to stay a handful of calls per hour.
const (
	MinSecretsRefresh = time.Second
	MaxSecretsRefresh = time.Hour
)

// Config is a function's configuration, read once from its environment
// through the variable names of package awsconfig (the names the templates
// set). Fields a function does not list in awsconfig stay zero.
type Config struct {
	// Function is the function's name in awsconfig.Functions.
	Function        string
	TablePrefix     string
	Shards          int
	LogPages        int // XJOB_LOG_PAGES (dynamostore.Options.LogPages; zero: 16)
	RingQueueURL    string
	DispatchFastURL string
	DispatchSlowURL string
	// DispatchFunction, when set, carries the lanes on asynchronous
	// invocations of the dispatch function (awsconfig.EnvDispatchFunction).
	DispatchFunction string
	// AccessToken and AdminToken are the tokens given directly
	// (XJOB_ACCESS_TOKEN, XJOB_ADMIN_TOKEN: tests and the emulated stack);
	// on AWS they are SSM parameters, named by the *Param fields, read by
	// Secrets (Base.AccessTokens, AdminTokens, SessionKey).
	AccessToken      string
	AdminToken       string
	AccessTokenParam string
	AdminTokenParam  string
	SessionKeyParam  string
	// SecretsRefresh is XJOB_SECRETS_REFRESH (zero: secrets.DefaultRefresh).
	SecretsRefresh time.Duration
	AlarmTopicARN  string
	// ResultsQueueURL is XJOB_RESULTS_QUEUE_URL (optional): the callback
	// function records executor results there and the dispatch function
	// applies them in batches; empty, the callback function applies each
	// request itself.
	ResultsQueueURL string
	// AnyTriggerAddress is XJOB_ALLOW_ANY_TRIGGER_ADDRESS (default false):
	// manual trigger overrides may name any host (admin.Config).
	AnyTriggerAddress bool
	// StartDeclaredJobs is XJOB_START_DECLARED_JOBS (default false): jobs
	// executors declare are created started (admin.Config).
	StartDeclaredJobs bool
	// LogLevel is XJOB_LOG_LEVEL (default info).
	LogLevel slog.Level
	// RetryDelay and RetryBackoff are XJOB_RETRY_DELAY and
	// XJOB_RETRY_BACKOFF (zero: callback.RetryPolicy's defaults).
	RetryDelay   time.Duration
	RetryBackoff float64
	// ScanAdvance is XJOB_SCAN_ADVANCE (zero: DefaultScanAdvance), the
	// scan's scan.Tunables.Advance.
	ScanAdvance time.Duration
	// RingLead is XJOB_RING_LEAD (zero: DefaultRingLead), the scan's
	// scan.Tunables.RingLead.
	RingLead time.Duration
	// Provisioned is XJOB_TABLE_BILLING_MODE=PROVISIONED: the steady
	// tables are deployed on provisioned capacity and the scan runs the
	// capacity keeper on them, sizing between CapacityMin and
	// CapacityMax units at TargetUtilization (XJOB_TABLE_CAPACITY_MIN,
	// _MAX, XJOB_TABLE_TARGET_UTILIZATION in percent; zero: the
	// templates' defaults, 1, 4000 and 70).
	Provisioned                                 bool
	CapacityMin, CapacityMax, TargetUtilization float64
	// Egress is the executor address rule, at registration and on every
	// dial: loopback refused (no executor runs inside a Lambda
	// environment, but a registration naming 127.0.0.1 would reach the
	// function's own runtime API), the operator's XJOB_ALLOW_CIDRS and
	// XJOB_DENY_CIDRS.
	Egress egress.Policy
	// GluePolicy is XJOB_GLUE_POLICY (default admins): who creates and
	// edits GLUE jobs (auth.GluePolicy).
	GluePolicy string
	// WebURL is XJOB_WEB_URL (optional): the web function's base address,
	// where the executor API's function URL forwards job declarations.
	WebURL string
	// MetricsPerJob is XJOB_METRICS_PER_JOB (default 0, none): per-job
	// result metrics for that many jobs of the deployment (EMF.Jobs).
	MetricsPerJob int
	// CustomMetrics is XJOB_CUSTOM_METRICS (default false): the pipeline's
	// EMF records carry their metric directive, so CloudWatch makes (and
	// bills) custom metrics of them; off, they are plain log lines.
	CustomMetrics bool
	// LogRetention is XJOB_LOG_RETENTION_DAYS in days (zero: the store's
	// default, awsconfig.DefaultLogRetentionDays): the store's LogTTL.
	LogRetention time.Duration
	// AWSTargets is XJOB_AWS_TARGET_ARNS (optional, default none): the
	// ARNs AWS jobs may call, checked when a job is saved and at each
	// fire; the templates grant exactly these.
	AWSTargets target.AllowList
}

// SecretNames are the SSM parameters Config names (none when the tokens
// are given directly).
func (c Config) SecretNames() []string {
	var names []string
	for _, n := range []string{c.AccessTokenParam, c.AdminTokenParam, c.SessionKeyParam} {
		if n != "" {
			names = append(names, n)
		}
	}
	return names
}

// LoadConfig reads function name's variables with getenv (os.Getenv in the
// mains, a map in tests). Every variable awsconfig lists as required must be
// set; each error names the offending variable, so a broken deployment says
// what to fix in its first log line.
func LoadConfig(name string, getenv func(string) string) (Config, error) {
	fn, ok := awsconfig.Lookup(name)
	if !ok {
		return Config{}, fmt.Errorf("lambdaapp config: unknown function %q", name)
	}
	cfg := Config{Function: name, LogLevel: slog.LevelInfo}
	var problems []string
	get := func(env string) string {
		v := strings.TrimSpace(getenv(env))
		direct, isSecret := awsconfig.SecretParams[env]
		if v == "" && isSecret && direct != "" && strings.TrimSpace(getenv(direct)) != "" {
			return "" // the value is given directly instead (tests)
		}
		if v == "" && slices.Contains(fn.Env, env) {
			problems = append(problems, env+" is required")
		}
		if v != "" && !slices.Contains(fn.Env, env) && !slices.Contains(fn.OptionalEnv, env) {
			return "" // not this function's variable: ignore it, as the templates would not set it
		}
		return v
	}
	cfg.TablePrefix = get(awsconfig.EnvTablePrefix)
	if s := get(awsconfig.EnvShards); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 4096 {
			problems = append(problems, fmt.Sprintf("%s=%q must be a whole number from 1 to 4096", awsconfig.EnvShards, s))
		}
		cfg.Shards = n
	}
	if s := get(awsconfig.EnvLogPages); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || !dynamostore.ValidLogPages(n) {
			problems = append(problems, fmt.Sprintf("%s=%q must be 1, 2, 4, 8 or 16", awsconfig.EnvLogPages, s))
		} else if p := logPagesProblem(cfg.Shards, n); p != "" {
			problems = append(problems, p)
		}
		cfg.LogPages = n
	}
	cfg.RingQueueURL = get(awsconfig.EnvRingQueueURL)
	cfg.DispatchFastURL = get(awsconfig.EnvDispatchFastURL)
	cfg.DispatchSlowURL = get(awsconfig.EnvDispatchSlowURL)
	cfg.DispatchFunction = get(awsconfig.EnvDispatchFunction)
	cfg.ResultsQueueURL = get(awsconfig.EnvResultsQueueURL)
	cfg.AccessToken = get(awsconfig.EnvAccessToken)
	cfg.AdminToken = get(awsconfig.EnvAdminToken)
	cfg.AccessTokenParam = get(awsconfig.EnvAccessTokenParam)
	cfg.AdminTokenParam = get(awsconfig.EnvAdminTokenParam)
	cfg.SessionKeyParam = get(awsconfig.EnvSessionKeyParam)
	if s := get(awsconfig.EnvSecretsRefresh); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d < MinSecretsRefresh || d > MaxSecretsRefresh {
			problems = append(problems, fmt.Sprintf("%s=%q must be a duration from %s to %s", awsconfig.EnvSecretsRefresh, s, MinSecretsRefresh, MaxSecretsRefresh))
		}
		cfg.SecretsRefresh = d
	}
	cfg.AlarmTopicARN = get(awsconfig.EnvAlarmTopicARN)
	if s := get(awsconfig.EnvRetryDelay); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d < 100*time.Millisecond || d > callback.MaxRetryDelay {
			problems = append(problems, fmt.Sprintf("%s=%q must be a duration from 100ms to %s", awsconfig.EnvRetryDelay, s, callback.MaxRetryDelay))
		}
		cfg.RetryDelay = d
	}
	if s := get(awsconfig.EnvRetryBackoff); s != "" {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || !(f >= 1 && f <= 10) {
			problems = append(problems, fmt.Sprintf("%s=%q must be a number from 1 to 10", awsconfig.EnvRetryBackoff, s))
		}
		cfg.RetryBackoff = f
	}
	if s := get(awsconfig.EnvScanAdvance); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d < ScanHorizon || d > MaxScanAdvance {
			problems = append(problems, fmt.Sprintf("%s=%q must be a duration from %s to %s", awsconfig.EnvScanAdvance, s, ScanHorizon, MaxScanAdvance))
		}
		cfg.ScanAdvance = d
	}
	if s := get(awsconfig.EnvRingLead); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || !regexp.MustCompile(awsconfig.RingLeadPattern).MatchString(s) || d < MinRingLead || d > MaxRingLead {
			problems = append(problems, fmt.Sprintf("%s=%q must be whole milliseconds from %s to %s (100ms)", awsconfig.EnvRingLead, s,
				MinRingLead, MaxRingLead))
		}
		cfg.RingLead = d
	}
	if s := get(awsconfig.EnvTableBillingMode); s != "" {
		if !slices.Contains(awsconfig.TableBillingModes, s) {
			problems = append(problems, fmt.Sprintf("%s=%q must be one of %s", awsconfig.EnvTableBillingMode, s, strings.Join(awsconfig.TableBillingModes, ", ")))
		}
		cfg.Provisioned = s == "PROVISIONED"
	}
	for _, r := range []struct {
		env    string
		lo, hi float64
		to     *float64
	}{{awsconfig.EnvTableCapacityMin, 1, 40000, &cfg.CapacityMin}, {awsconfig.EnvTableCapacityMax, 1, 40000, &cfg.CapacityMax},
		{awsconfig.EnvTableTargetUtilization, 20, 90, &cfg.TargetUtilization}} {
		s := get(r.env)
		if s == "" {
			continue
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || !(f >= r.lo && f <= r.hi) {
			problems = append(problems, fmt.Sprintf("%s=%q must be a number from %g to %g", r.env, s, r.lo, r.hi))
		}
		*r.to = f
	}
	if s := get(awsconfig.EnvAnyTriggerAddress); s != "" {
		b, err := strconv.ParseBool(s)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s=%q must be true or false", awsconfig.EnvAnyTriggerAddress, s))
		}
		cfg.AnyTriggerAddress = b
	}
	if s := get(awsconfig.EnvStartDeclaredJobs); s != "" {
		b, err := strconv.ParseBool(s)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s=%q must be true or false", awsconfig.EnvStartDeclaredJobs, s))
		}
		cfg.StartDeclaredJobs = b
	}
	cidrs := regexp.MustCompile(awsconfig.CIDRListPattern)
	for _, r := range []struct {
		env string
		to  *[]netip.Prefix
	}{{awsconfig.EnvAllowCIDRs, &cfg.Egress.Allow}, {awsconfig.EnvDenyCIDRs, &cfg.Egress.Deny}} {
		s := get(r.env)
		if s == "" {
			continue
		}
		ps, err := egress.ParsePrefixes(s)
		if err != nil || !cidrs.MatchString(s) {
			problems = append(problems, fmt.Sprintf("%s=%q must be IP addresses or CIDR ranges separated by commas (10.0.0.0/8,fd00::/8)", r.env, s))
		}
		*r.to = ps
	}
	if s := get(awsconfig.EnvWebURL); s != "" {
		u, err := url.Parse(s)
		if err != nil || u.Scheme != "https" && u.Scheme != "http" || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			problems = append(problems, fmt.Sprintf("%s=%q must be an http(s) base address (https://api.example.com)", awsconfig.EnvWebURL, s))
		}
		cfg.WebURL = strings.TrimRight(s, "/")
	}
	cfg.GluePolicy = "admins"
	if s := get(awsconfig.EnvGluePolicy); s != "" {
		if !slices.Contains(awsconfig.GluePolicies, s) {
			problems = append(problems, fmt.Sprintf("%s=%q must be one of %s", awsconfig.EnvGluePolicy, s, strings.Join(awsconfig.GluePolicies, ", ")))
		}
		cfg.GluePolicy = s
	}
	if s := get(awsconfig.EnvMetricsPerJob); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 0 || v > awsconfig.MaxMetricsPerJob {
			problems = append(problems, fmt.Sprintf("%s=%q must be a number from 0 to %d", awsconfig.EnvMetricsPerJob, s, awsconfig.MaxMetricsPerJob))
		}
		cfg.MetricsPerJob = v
	}
	if s := get(awsconfig.EnvCustomMetrics); s != "" {
		// Only the two spellings the templates allow: a value the stack
		// refuses is one the functions refuse.
		if s != "true" && s != "false" {
			problems = append(problems, fmt.Sprintf("%s=%q must be true or false", awsconfig.EnvCustomMetrics, s))
		}
		cfg.CustomMetrics = s == "true"
	}
	if s := get(awsconfig.EnvLogRetentionDays); s != "" {
		days, err := strconv.Atoi(s)
		if err != nil || !regexp.MustCompile(awsconfig.LogRetentionDaysPattern).MatchString(s) ||
			days < awsconfig.MinLogRetentionDays || days > awsconfig.MaxLogRetentionDays {
			problems = append(problems, fmt.Sprintf("%s=%q must be a whole number of days from %d to %d", awsconfig.EnvLogRetentionDays, s,
				awsconfig.MinLogRetentionDays, awsconfig.MaxLogRetentionDays))
		}
		cfg.LogRetention = time.Duration(days) * 24 * time.Hour
	}
	if s := get(awsconfig.EnvAWSTargetARNs); s != "" {
		allow, err := target.ParseAllowList(s)
		if err != nil || !regexp.MustCompile(awsconfig.TargetARNListPattern).MatchString(s) {
			why := "must be ARNs of Lambda functions, SQS queues, SNS topics, EventBridge buses or Step Functions state machines separated by commas, without wildcards"
			if err != nil {
				why += ": " + err.Error()
			}
			problems = append(problems, fmt.Sprintf("%s=%q %s", awsconfig.EnvAWSTargetARNs, s, why))
		}
		cfg.AWSTargets = allow
	}
	if lv := strings.TrimSpace(getenv(awsconfig.EnvLogLevel)); lv != "" {
		if err := cfg.LogLevel.UnmarshalText([]byte(lv)); err != nil {
			problems = append(problems, fmt.Sprintf("%s=%q must be debug, info, warn or error", awsconfig.EnvLogLevel, lv))
		}
	}
	// Every function sends to the lanes: on asynchronous invocations of
	// the dispatch function, whose tasks due later wait in the ring
	// queue, or on the two lane queues.
	switch {
	case cfg.DispatchFunction != "" && cfg.RingQueueURL == "":
		problems = append(problems, fmt.Sprintf("%s needs %s (where tasks due later wait)", awsconfig.EnvDispatchFunction, awsconfig.EnvRingQueueURL))
	case cfg.DispatchFunction == "" && (cfg.DispatchFastURL == "" || cfg.DispatchSlowURL == ""):
		problems = append(problems, fmt.Sprintf("%s is required (or %s and %s)", awsconfig.EnvDispatchFunction,
			awsconfig.EnvDispatchFastURL, awsconfig.EnvDispatchSlowURL))
	}
	if len(problems) > 0 {
		return Config{}, fmt.Errorf("lambdaapp config (%s): %s", name, strings.Join(problems, "; "))
	}
	return cfg, nil
}

// logPagesProblem says why logPages log pages a second do not suit shards
// scan shards (zero: the default 16), or "". When the shard count divides
// 16, a page's jobs must be one shard's (a ring bucket owns its pages),
// which takes LogPages a multiple of Shards: with fewer pages, buckets of
// different shards would write one page and race on it every second.
// Other counts (not dividing 16) share pages across buckets whatever
// LogPages is.
func logPagesProblem(shards, logPages int) string {
	if shards == 0 {
		shards = 16
	}
	if 16%shards == 0 && logPages%shards != 0 {
		return fmt.Sprintf("%s=%d must be a multiple of %s=%d (one ring bucket, one shard's fires of a second, owns its log pages): "+
			"set %s to %d or more, or lower Shards", awsconfig.EnvLogPages, logPages, awsconfig.EnvShards, shards, awsconfig.EnvLogPages, shards)
	}
	return ""
}
