package local

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		check   func(t *testing.T, c Config)
		wantErr []string // substrings the error must contain
	}{
		{name: "defaults", check: func(t *testing.T, c Config) {
			want := Defaults()
			if c.DB != want.DB || c.Listen != "127.0.0.1:8080" || c.Shards != 16 || c.FastWorkers != 200 ||
				c.SlowWorkers != 100 || c.Grace != 10*time.Second || c.Demo || c.LogLevel != slog.LevelInfo {
				t.Errorf("got %+v", c)
			}
		}},
		{name: "env", env: map[string]string{
			"XJOB_DB": "/tmp/x.db", "XJOB_LISTEN": ":9090", "XJOB_ADMIN_TOKEN": "secret-token-0123",
			"XJOB_ACCESS_TOKEN": "default_token", "XJOB_SHARDS": "4", "XJOB_ALARM_WEBHOOK": "https://hooks.example.com/x",
			"XJOB_SHUTDOWN_GRACE": "3s", "XJOB_DEMO": "true", "XJOB_LOG_LEVEL": "debug", "XJOB_FAST_WORKERS": "7",
			"XJOB_ALLOW_WEAK_ACCESS_TOKEN": "true", "XJOB_ALLOW_CIDRS": "169.254.10.0/24", "XJOB_DENY_CIDRS": "10.9.0.0/16",
		}, check: func(t *testing.T, c Config) {
			if !c.AllowWeakAccessToken || c.AllowCIDRs != "169.254.10.0/24" || c.DenyCIDRs != "10.9.0.0/16" {
				t.Errorf("got %+v", c)
			}
			if c.DB != "/tmp/x.db" || c.Listen != ":9090" || c.AdminToken != "secret-token-0123" || c.AccessToken != "default_token" ||
				c.Shards != 4 || c.AlarmWebhook != "https://hooks.example.com/x" || c.Grace != 3*time.Second || !c.Demo ||
				c.LogLevel != slog.LevelDebug || c.FastWorkers != 7 {
				t.Errorf("got %+v", c)
			}
		}},
		{name: "default_token refused", args: []string{"--access-token", "default_token"},
			wantErr: []string{"--access-token (XJOB_ACCESS_TOKEN): is weak", "--allow-weak-access-token"}},
		{name: "short token refused", args: []string{"--access-token", "x"},
			wantErr: []string{"--access-token (XJOB_ACCESS_TOKEN): is weak"}},
		{name: "weak token accepted on request", args: []string{"--access-token", "x", "--allow-weak-access-token"},
			check: func(t *testing.T, c Config) {
				if c.AccessToken != "x" || !c.AllowWeakAccessToken {
					t.Errorf("got %+v", c)
				}
			}},
		{name: "bad cidrs", args: []string{"--allow-cidrs", "10.0.0.0/33", "--deny-cidrs", "nonsense", "--trusted-proxies", "proxy"},
			wantErr: []string{"--allow-cidrs (XJOB_ALLOW_CIDRS)", "--deny-cidrs (XJOB_DENY_CIDRS)", "--trusted-proxies (XJOB_TRUSTED_PROXIES)"}},
		{name: "bad target ARN", args: []string{"--aws-target-arns", "arn:aws:sqs:us-east-1:123456789012:q,arn:aws:s3:::bucket"},
			wantErr: []string{"--aws-target-arns (XJOB_AWS_TARGET_ARNS): allowed target ARN \"arn:aws:s3:::bucket\""}},
		{name: "flags win over env", args: []string{"--db", "a.db", "--shards=8", "--demo", "--grace", "1s"},
			env: map[string]string{"XJOB_DB": "b.db", "XJOB_SHARDS": "2"},
			check: func(t *testing.T, c Config) {
				if c.DB != "a.db" || c.Shards != 8 || !c.Demo || c.Grace != time.Second {
					t.Errorf("got %+v", c)
				}
			}},
		{name: "empty env is unset", env: map[string]string{"XJOB_SHARDS": ""}, check: func(t *testing.T, c Config) {
			if c.Shards != DefaultShards {
				t.Errorf("shards = %d", c.Shards)
			}
		}},
		{name: "bad env integer names the variable", env: map[string]string{"XJOB_SHARDS": "many"},
			wantErr: []string{"XJOB_SHARDS", `"many" is not an integer`}},
		{name: "bad flag duration names the flag", args: []string{"--grace", "soon"},
			wantErr: []string{"--grace", "not a duration"}},
		{name: "shards out of range", args: []string{"--shards", "0"}, wantErr: []string{"--shards (XJOB_SHARDS)", "between 1 and 1024"}},
		{name: "listen not host:port", env: map[string]string{"XJOB_LISTEN": "8080"}, wantErr: []string{"--listen (XJOB_LISTEN)"}},
		{name: "short admin token", env: map[string]string{"XJOB_ADMIN_TOKEN": "abc"}, wantErr: []string{"--admin-token (XJOB_ADMIN_TOKEN)", "at least 16"}},
		{name: "webhook not http", env: map[string]string{"XJOB_ALARM_WEBHOOK": "ftp://x"}, wantErr: []string{"XJOB_ALARM_WEBHOOK", "not an http(s) URL"}},
		{name: "secret without webhook", env: map[string]string{"XJOB_ALARM_WEBHOOK_SECRET": "s"}, wantErr: []string{"XJOB_ALARM_WEBHOOK_SECRET"}},
		{name: "memory db refused", args: []string{"--db", ":memory:"}, wantErr: []string{"--db (XJOB_DB)", "file path"}},
		{name: "workers", args: []string{"--slow-workers", "0"}, wantErr: []string{"--slow-workers (XJOB_SLOW_WORKERS)"}},
		{name: "retention below minimum", args: []string{"--log-retention-days", "3"}, wantErr: []string{"XJOB_LOG_RETENTION_DAYS", "at least 7"}},
		{name: "retention disabled", args: []string{"--log-retention-days", "-1"}, check: func(t *testing.T, c Config) {
			if c.LogRetentionDays != -1 {
				t.Errorf("retention = %d", c.LogRetentionDays)
			}
		}},
		{name: "bad log level", env: map[string]string{"XJOB_LOG_LEVEL": "loud"}, wantErr: []string{"XJOB_LOG_LEVEL"}},
		{name: "retry delay and backoff", args: []string{"--retry-delay", "2s"}, env: map[string]string{"XJOB_RETRY_BACKOFF": "2.5"},
			check: func(t *testing.T, c Config) {
				if c.RetryDelay != 2*time.Second || c.RetryBackoff != 2.5 {
					t.Errorf("retry delay %s backoff %g", c.RetryDelay, c.RetryBackoff)
				}
			}},
		{name: "retry defaults", check: func(t *testing.T, c Config) {
			if c.RetryDelay != 5*time.Second || c.RetryBackoff != 1 {
				t.Errorf("retry delay %s backoff %g", c.RetryDelay, c.RetryBackoff)
			}
		}},
		{name: "retry delay out of range", env: map[string]string{"XJOB_RETRY_DELAY": "20m"}, wantErr: []string{"--retry-delay (XJOB_RETRY_DELAY)"}},
		{name: "retry backoff not a number", args: []string{"--retry-backoff", "fast"}, wantErr: []string{"--retry-backoff", "not a number"}},
		{name: "retry backoff below 1", env: map[string]string{"XJOB_RETRY_BACKOFF": "0.5"}, wantErr: []string{"XJOB_RETRY_BACKOFF", "between 1 and 10"}},
		{name: "pprof beyond loopback refused", args: []string{"--pprof-listen", "0.0.0.0:6060"}, wantErr: []string{"--pprof-listen (XJOB_PPROF_LISTEN)", "loopback"}},
		{name: "pprof on loopback", env: map[string]string{"XJOB_PPROF_LISTEN": "127.0.0.1:6060"}, check: func(t *testing.T, c Config) {
			if c.PprofListen != "127.0.0.1:6060" {
				t.Errorf("PprofListen = %q", c.PprofListen)
			}
		}},
		{name: "demo on the API port", args: []string{"--demo", "--demo-listen", "127.0.0.1:8080"}, wantErr: []string{"--demo-listen (XJOB_DEMO_LISTEN)"}},
		{name: "several problems at once", args: []string{"--shards", "0", "--grace", "-1s"},
			wantErr: []string{"--shards", "--grace"}},
		{name: "stray argument", args: []string{"extra"}, wantErr: []string{`unexpected argument "extra"`}},
		{name: "unknown flag", args: []string{"--nope"}, wantErr: []string{"nope"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			getenv := func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok }
			c, err := Parse(tt.args, getenv, io.Discard)
			if len(tt.wantErr) > 0 {
				if err == nil {
					t.Fatalf("no error, config %+v", c)
				}
				for _, w := range tt.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not mention %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, c)
		})
	}
}

func TestParseHelp(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	_, err := Parse([]string{"-h"}, nil, &out)
	if !errors.Is(err, ErrHelp) {
		t.Fatalf("err = %v", err)
	}
	// The CLI's double-dash style, numeric flags typed as numbers.
	for _, w := range []string{"--db string", "XJOB_DB", "XJOB_ADMIN_TOKEN", "--shards int", "XJOB_SHARDS", "default 16",
		"--grace duration", "XJOB_ALARM_WEBHOOK", "--demo ", "--fast-workers int"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("usage does not mention %s:\n%s", w, out.String())
		}
	}
}

func TestOpenSite(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := Defaults()
	cfg.DB = dir + "/data/x.db"
	first, err := openSite(&cfg, quietLogger)
	if err != nil {
		t.Fatal(err)
	}
	if !first.tokenGenerated || len(first.adminToken) < minTokenLen || first.ownerShared {
		t.Fatalf("first start: %+v", first)
	}
	// A second process on the same file gets the same token but its own owner.
	second, err := openSite(&cfg, quietLogger)
	if err != nil {
		t.Fatal(err)
	}
	if !second.ownerShared || second.owner == first.owner || second.adminToken != first.adminToken || second.tokenGenerated {
		t.Fatalf("concurrent start: first %+v second %+v", first, second)
	}
	second.close()
	first.close()
	// A restart takes the stable owner back.
	again, err := openSite(&cfg, quietLogger)
	if err != nil {
		t.Fatal(err)
	}
	defer again.close()
	if again.owner != first.owner || again.ownerShared {
		t.Fatalf("restart owner %q, want %q", again.owner, first.owner)
	}
	// The shard count is fixed at creation.
	other := cfg
	other.Shards = 4
	if _, err := openSite(&other, quietLogger); err == nil || !strings.Contains(err.Error(), "XJOB_SHARDS") {
		t.Fatalf("changed shards: %v", err)
	}
	// A configured token is used as is, and the generated one is private.
	withTok := cfg
	withTok.AdminToken = "configured-token-0123"
	s, err := openSite(&withTok, quietLogger)
	if err != nil {
		t.Fatal(err)
	}
	s.close()
	if s.adminToken != "configured-token-0123" || s.tokenFile != "" {
		t.Fatalf("configured token: %+v", s)
	}
	for _, p := range []string{tokenPath(cfg.DB), statePath(cfg.DB)} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v %v", p, fi, err)
		}
	}
}

var quietLogger = slog.New(slog.DiscardHandler)

// Without a configured access token one is generated on first start
// (0600, kept), so executor routes are never open; a later start reuses
// it, and a token file others can read is reported.
func TestAccessTokenGenerated(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	base := Defaults()
	base.DB = dir + "/x.db"
	cfg := base
	first, err := openSite(&cfg, quietLogger)
	if err != nil {
		t.Fatal(err)
	}
	first.close()
	if len(cfg.AccessToken) < minTokenLen || !first.accessTokenGenerated || first.accessTokenFile != accessTokenPath(base.DB) {
		t.Fatalf("first start: token %q, site %+v", cfg.AccessToken, first)
	}
	if fi, err := os.Stat(accessTokenPath(base.DB)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("access token file: %v %v", fi, err)
	}
	if err := os.Chmod(accessTokenPath(base.DB), 0o644); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	again := base
	second, err := openSite(&again, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	second.close()
	if again.AccessToken != cfg.AccessToken || second.accessTokenGenerated {
		t.Fatalf("restart: token %q (was %q), generated %v", again.AccessToken, cfg.AccessToken, second.accessTokenGenerated)
	}
	if !strings.Contains(logs.String(), "token file is readable or writable by others") ||
		!strings.Contains(logs.String(), accessTokenPath(base.DB)) {
		t.Fatalf("lax token file not reported: %s", logs.String())
	}
	configured := base
	configured.AccessToken = "configured-access-token"
	third, err := openSite(&configured, quietLogger)
	if err != nil {
		t.Fatal(err)
	}
	third.close()
	if configured.AccessToken != "configured-access-token" || third.accessTokenFile != "" {
		t.Fatalf("configured token replaced: %q %+v", configured.AccessToken, third)
	}
}

// Tokens are shown once, on the start that generated them.
func TestBannerShowsTokensOnlyWhenGenerated(t *testing.T) {
	t.Parallel()
	info := Info{URL: "http://127.0.0.1:8080", AdminToken: "admin-secret-0123456789", TokenFile: "/d/x.db.admin-token",
		AccessToken: "access-secret-0123456789", AccessTokenFile: "/d/x.db.access-token"}
	for _, generated := range []bool{true, false} {
		var b bytes.Buffer
		printBanner(&b, Defaults(), info, generated, generated)
		for _, tok := range []string{info.AdminToken, info.AccessToken} {
			if strings.Contains(b.String(), tok) != generated {
				t.Errorf("generated=%v: banner shows %s: %v\n%s", generated, tok, !generated, b.String())
			}
		}
	}
	var b bytes.Buffer
	configured := Info{URL: info.URL, AdminToken: "configured-admin-token", AccessToken: "configured-access-token"}
	printBanner(&b, Defaults(), configured, false, false)
	if strings.Contains(b.String(), "configured-admin-token") || strings.Contains(b.String(), "configured-access-token") {
		t.Errorf("banner shows a configured token:\n%s", b.String())
	}
}

// TestParseEveryFlag gives every flag of `xjob local` in each form pflag
// takes (--name value, --name=value, a bare bool, -h) and checks the
// Config it lands in; no flag is left out.
func TestParseEveryFlag(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		want func(c *Config)
	}{
		{[]string{"--db", "x/y.db"}, func(c *Config) { c.DB = "x/y.db" }},
		{[]string{"--listen=127.0.0.1:9000"}, func(c *Config) { c.Listen = "127.0.0.1:9000" }},
		{[]string{"--admin-token", "0123456789abcdef"}, func(c *Config) { c.AdminToken = "0123456789abcdef" }},
		{[]string{"--access-token", "shared-access-token"}, func(c *Config) { c.AccessToken = "shared-access-token" }},
		{[]string{"--access-token", "shared", "--allow-weak-access-token"},
			func(c *Config) { c.AccessToken, c.AllowWeakAccessToken = "shared", true }},
		{[]string{"--glue-policy", "off"}, func(c *Config) { c.GluePolicy = "off" }},
		{[]string{"--allow-cidrs", "169.254.10.0/24", "--deny-cidrs=10.9.0.0/16"},
			func(c *Config) { c.AllowCIDRs, c.DenyCIDRs = "169.254.10.0/24", "10.9.0.0/16" }},
		{[]string{"--trusted-proxies", "10.0.0.0/24,192.0.2.7"}, func(c *Config) { c.TrustedProxies = "10.0.0.0/24,192.0.2.7" }},
		{[]string{"--aws-target-arns", "arn:aws:sqs:us-east-1:123456789012:q"}, func(c *Config) { c.AWSTargetARNs = "arn:aws:sqs:us-east-1:123456789012:q" }},
		{[]string{"--allow-any-trigger-address"}, func(c *Config) { c.AnyTriggerAddress = true }},
		{[]string{"--start-declared-jobs=true"}, func(c *Config) { c.StartDeclaredJobs = true }},
		{[]string{"--shards", "4"}, func(c *Config) { c.Shards = 4 }},
		{[]string{"--alarm-webhook", "https://hooks.example.com/x", "--alarm-webhook-secret", "s"},
			func(c *Config) { c.AlarmWebhook, c.AlarmWebhookSecret = "https://hooks.example.com/x", "s" }},
		{[]string{"--fast-workers", "3", "--slow-workers=2", "--ring-workers", "1"},
			func(c *Config) { c.FastWorkers, c.SlowWorkers, c.RingWorkers = 3, 2, 1 }},
		{[]string{"--grace", "2s"}, func(c *Config) { c.Grace = 2 * time.Second }},
		{[]string{"--log-retention-days", "9"}, func(c *Config) { c.LogRetentionDays = 9 }},
		{[]string{"--metrics-per-job", "20"}, func(c *Config) { c.MetricsPerJob = 20 }},
		{[]string{"--retry-delay", "3s", "--retry-backoff", "2"}, func(c *Config) { c.RetryDelay, c.RetryBackoff = 3*time.Second, 2 }},
		{[]string{"--log-level", "warn"}, func(c *Config) { c.LogLevel = slog.LevelWarn }},
		{[]string{"--demo", "--demo-listen", "127.0.0.1:9001"}, func(c *Config) { c.Demo, c.DemoListen = true, "127.0.0.1:9001" }},
		{[]string{"--demo=false"}, func(*Config) {}},
		{[]string{"--pprof-listen", "127.0.0.1:6060"}, func(c *Config) { c.PprofListen = "127.0.0.1:6060" }},
		{[]string{"--memory-limit", "256MiB"}, func(c *Config) { c.MemoryLimit = 256 << 20 }},
		{[]string{"--memory-limit=off"}, func(c *Config) { c.MemoryLimit = 0 }},
	}
	seen := map[string]bool{}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			got, err := Parse(tt.args, nil, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			want := Defaults()
			tt.want(&want)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got  %+v\nwant %+v", got, want)
			}
		})
		for _, a := range tt.args {
			if name, ok := strings.CutPrefix(a, "--"); ok {
				name, _, _ = strings.Cut(name, "=")
				seen[name] = true
			}
		}
	}
	for _, o := range options() {
		if !seen[o.flag] && o.mode != modeServer {
			t.Errorf("--%s is not tested", o.flag)
		}
	}
}

// `xjob server` takes the options it shares with local mode and its own;
// each of its own is parsed into its field, secrets from their files.
func TestParseServerEveryFlag(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, v string) string {
		p := dir + "/" + name
		if err := os.WriteFile(p, []byte(v+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	adminFile, accessFile, keyFile := write("admin", "admin-token-from-file-0123"), write("access", "access-token-from-file-0123"),
		write("key", "session-key-from-file-0123")
	base := []string{"--db", "postgres://u:p@db:5432/xjob", "--admin-token", "admin-token-0123456789", "--access-token", "access-token-0123456789"}
	tests := []struct {
		args []string
		want func(c *Config)
	}{
		{nil, func(*Config) {}},
		{[]string{"--node-id", "xjob-0"}, func(c *Config) { c.NodeID = "xjob-0" }},
		{[]string{"--public-url", "https://xjob.example.com"}, func(c *Config) { c.PublicURL = "https://xjob.example.com" }},
		{[]string{"--lease-ttl", "8s"}, func(c *Config) { c.LeaseTTL = 8 * time.Second }},
		{[]string{"--session-key", "session-key-0123456789"}, func(c *Config) { c.SessionKey = "session-key-0123456789" }},
		{[]string{"--session-key-file", keyFile}, func(c *Config) { c.SessionKeyFile, c.SessionKey = keyFile, "session-key-from-file-0123" }},
	}
	seen := map[string]bool{"db": true, "admin-token": true, "access-token": true}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			// A flag given twice takes its last value: tt.args win over base.
			got, err := ParseServer(append(append(slices.Clone(base), "--node-id", "n1"), tt.args...), nil, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			want := ServerDefaults()
			want.DB, want.AdminToken, want.AccessToken, want.NodeID = "postgres://u:p@db:5432/xjob", "admin-token-0123456789", "access-token-0123456789", "n1"
			tt.want(&want)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got  %+v\nwant %+v", got, want)
			}
		})
		for _, a := range tt.args {
			if name, ok := strings.CutPrefix(a, "--"); ok {
				seen[name] = true
			}
		}
	}
	// The token files, without the tokens given directly.
	got, err := ParseServer([]string{"--db", "mysql://u:p@db/xjob", "--node-id", "n1", "--admin-token-file", adminFile,
		"--access-token-file", accessFile}, nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if got.AdminToken != "admin-token-from-file-0123" || got.AccessToken != "access-token-from-file-0123" {
		t.Fatalf("tokens from files: %q %q", got.AdminToken, got.AccessToken)
	}
	seen["admin-token-file"], seen["access-token-file"] = true, true
	for _, o := range options() {
		if o.mode == modeServer && !seen[o.flag] {
			t.Errorf("--%s is not tested", o.flag)
		}
	}
}

// Bad server settings are refused naming the flag, and never echo the
// database URL's password.
func TestParseServerRefuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{}, "--db (XJOB_DB): is required"},
		{[]string{"--db", "sqlserver://u:hunter2-secret@db/x"}, "scheme is not postgres"},
		{[]string{"--db", "postgres://u:p@db/x"}, "--admin-token (XJOB_ADMIN_TOKEN): is required"},
		{[]string{"--db", "postgres://u:p@db/x", "--admin-token", "admin-token-0123456789"}, "--access-token (XJOB_ACCESS_TOKEN): is required"},
		{[]string{"--db", "postgres://u:p@db/x", "--admin-token", "admin-token-0123456789", "--access-token", "access-token-0123456789",
			"--lease-ttl", "1s"}, "--lease-ttl (XJOB_LEASE_TTL): must be between 2s and 1m"},
		{[]string{"--db", "postgres://u:p@db/x", "--admin-token", "admin-token-0123456789", "--admin-token-file", "/nonexistent"},
			"--admin-token-file (XJOB_ADMIN_TOKEN_FILE): the secret is also given directly"},
		{[]string{"--db", "postgres://u:p@db/x", "--demo"}, "unknown flag: --demo"},
	} {
		_, err := ParseServer(append(tc.args, "--node-id", "n1"), nil, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "hunter2-secret") {
			t.Errorf("%v: the error shows the password: %v", tc.args, err)
		}
	}
}
