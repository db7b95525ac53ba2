package lambdaapp

import (
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/xjobdev/xjob/internal/adapter/awsconfig"
	"github.com/xjobdev/xjob/internal/scheduler/callback"
)

// Config is a function's configuration, read once from its environment
// through the variable names of package awsconfig (the names the templates
// set). Fields a function does not list in awsconfig stay zero.
type Config struct {
	// Function is the function's name in awsconfig.Functions.
	Function        string
	TablePrefix     string
	Shards          int
	RingQueueURL    string
	DispatchFastURL string
	DispatchSlowURL string
	AccessToken     string
	AdminToken      string
	AlarmTopicARN   string
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
	// scan's scan.Config.Advance.
	ScanAdvance time.Duration
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
	cfg.RingQueueURL = get(awsconfig.EnvRingQueueURL)
	cfg.DispatchFastURL = get(awsconfig.EnvDispatchFastURL)
	cfg.DispatchSlowURL = get(awsconfig.EnvDispatchSlowURL)
	cfg.AccessToken = get(awsconfig.EnvAccessToken)
	cfg.AdminToken = get(awsconfig.EnvAdminToken)
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
	if lv := strings.TrimSpace(getenv(awsconfig.EnvLogLevel)); lv != "" {
		if err := cfg.LogLevel.UnmarshalText([]byte(lv)); err != nil {
			problems = append(problems, fmt.Sprintf("%s=%q must be debug, info, warn or error", awsconfig.EnvLogLevel, lv))
		}
	}
	if len(problems) > 0 {
		return Config{}, fmt.Errorf("lambdaapp config (%s): %s", name, strings.Join(problems, "; "))
	}
	return cfg, nil
}
