package local

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/spf13/pflag"

	"github.com/xjobdev/xjob/internal/egress"
	"github.com/xjobdev/xjob/internal/scheduler/callback"
	"github.com/xjobdev/xjob/internal/target"
	"github.com/xjobdev/xjob/internal/web/auth"

	"github.com/xjobdev/xjob/pkg/clock"
)

// Config is everything `xjob local` needs. Parse builds it from flags and
// the environment; Validate checks it once, before anything starts.
type Config struct {
	// DB is the SQLite file (created if missing, with its directory).
	DB string
	// Listen is the address of the one HTTP listener (executor API and
	// admin API). Loopback by default: exposing it is a choice.
	Listen string
	// AdminToken is the bearer token of the admin API. Empty: the token
	// stored next to DB is used, generated on first start.
	AdminToken string
	// AccessToken is xxl-job's XXL-JOB-ACCESS-TOKEN, shared with executors.
	// Empty: the token stored next to DB is used, generated on first start
	// (executor routes are never open, unlike xxl-job without a token).
	AccessToken string
	// AllowWeakAccessToken accepts an AccessToken shorter than 16
	// characters or equal to xxl-job's published default_token (an
	// existing fleet of executors being migrated), with a warning at
	// every start. Off, such a token is refused.
	AllowWeakAccessToken bool
	// AllowCIDRs and DenyCIDRs are the operator's executor address ranges
	// (comma-separated CIDRs; package egress): Deny wins, Allow overrides
	// the built-in refusals (link-local, cloud metadata). Loopback is
	// allowed in xjob local, where executors run on the same machine.
	AllowCIDRs, DenyCIDRs string
	// AWSTargetARNs lists the ARNs AWS jobs may call (comma- or
	// space-separated; package target). Empty: AWS jobs are refused at
	// save. The calls use the SDK's default credentials chain and its
	// AWS_ENDPOINT_URL* variables.
	AWSTargetARNs string
	// AWSEndpoints maps a target service (target.ServiceSQS, …) to a base
	// endpoint (emulators, tests); no flag: AWS_ENDPOINT_URL_<SERVICE>
	// does the same for an operator.
	AWSEndpoints map[string]string
	// AWSConfig is the SDK configuration of AWS jobs' calls (an embedding
	// program's, a test's); nil loads the default chain.
	AWSConfig *aws.Config
	// TrustedProxies are the reverse proxies (comma-separated CIDRs or
	// IPs) whose X-Forwarded-For names the client, for the sign-in
	// limits and the audit log (package clientip). Empty: the
	// connection's peer is the client, whatever the header says.
	TrustedProxies string
	// GluePolicy is who may create and edit GLUE jobs: admins, everyone
	// (xxl-job's behaviour) or off. Empty: admins on a new installation,
	// everyone on one that already holds GLUE jobs (imported from
	// xxl-job); the choice is logged at start.
	GluePolicy string
	// AnyTriggerAddress lets a manual trigger's address override name any
	// http(s) address; off, only the group's own addresses (admin.Config).
	AnyTriggerAddress bool
	// StartDeclaredJobs starts the jobs executors declare when they are
	// created (admin.Config); off by default.
	StartDeclaredJobs bool
	// Shards is the number of scan shards. It is fixed when the file is
	// created; a different value on a later start is refused.
	Shards int
	// AlarmWebhook, when set, receives a JSON POST per failed trigger
	// (package alarm), in addition to the error log line.
	AlarmWebhook string
	// AlarmWebhookSecret signs webhook bodies (HMAC-SHA256).
	AlarmWebhookSecret string
	// FastWorkers and SlowWorkers bound concurrent dispatches per lane
	// (xxl-job's triggerPoolFastMax 200 and triggerPoolSlowMax 100).
	FastWorkers int
	SlowWorkers int
	// RingWorkers is how many ring buckets fire at once.
	RingWorkers int
	// Grace bounds how long shutdown waits for in-flight ring and
	// dispatch work; what it cuts short comes back on the next start.
	Grace time.Duration
	// LogRetentionDays: trigger logs older than this are purged daily;
	// -1 keeps them forever.
	LogRetentionDays int
	// MetricsPerJob, above 0, adds xjob_job_results_total{job} to
	// /metrics for at most this many jobs (0: off, the default).
	MetricsPerJob int
	// RetryDelay is how long after a failure its retry is sent, and how
	// long a retry the executor refuses as busy is put off
	// (callback.RetryPolicy).
	RetryDelay time.Duration
	// RetryBackoff multiplies RetryDelay for each retry already made of a
	// failure (1: constant).
	RetryBackoff float64
	// LogLevel of the JSON process log on stderr.
	LogLevel slog.Level
	// Demo creates a demo executor group and two demo jobs and serves
	// them from an in-process executor on DemoListen.
	Demo       bool
	DemoListen string
	// PprofListen, when set, serves net/http/pprof on its own listener
	// (keep it on loopback: it is not authenticated).
	PprofListen string
	// MemoryLimit is the soft limit of the Go runtime's memory in bytes
	// that Main and ServerMain set (debug.SetMemoryLimit; see
	// DefaultMemoryLimit for why there is none by default). 0: none set by
	// xjob; GOMEMLIMIT, when set and no XJOB_MEMORY_LIMIT or flag is
	// given, is the runtime's own and wins over the default.
	MemoryLimit int64

	// Server is `xjob server`: DB is a PostgreSQL or MySQL URL shared by
	// the nodes of a cluster (see server.go); the fields below are its own.
	Server bool
	// NodeID names this node in the cluster (default: the host name).
	// It is the owner of the node's shard leases, so it must be unique;
	// a restarted node with the same id takes its leases back at once.
	NodeID string
	// PublicURL is where executors and browsers reach the cluster (the
	// load balancer's address); default http:// and the listen address.
	PublicURL string
	// LeaseTTL bounds failover: a killed node's shards pass to the others
	// this long after its last beat.
	LeaseTTL time.Duration
	// SessionKey signs console sessions; every node must have the same.
	// Empty: derived from the admin token, as in local mode.
	SessionKey string
	// AdminTokenFile, AccessTokenFile and SessionKeyFile name files
	// holding those secrets (a mounted Kubernetes Secret); read at start.
	AdminTokenFile, AccessTokenFile, SessionKeyFile string

	// Stdout receives the start-up banner (how to reach the API, the
	// generated token, demo hints). Nil: nothing is printed.
	Stdout io.Writer
	// Logger overrides the JSON process logger (tests).
	Logger *slog.Logger
	// Clock is the time everything runs on, shutdown's grace included;
	// nil is the wall clock (tests set a fake one).
	Clock clock.Clock
	// executorReadTimeout, when set, replaces the executor client's read
	// timeout (a wall-clock one): tests that hold a call in flight on a
	// fake clock set it long, so only the clock ends the call.
	executorReadTimeout time.Duration
	// Ready, if set, is called once every service runs and the listener
	// accepts connections (tests learn the address and token from it).
	Ready func(Info)

	// wrapListener, if set, wraps the HTTP listener (tests count the
	// bytes the server reads).
	wrapListener func(net.Listener) net.Listener
}

// Info describes a running local scheduler.
type Info struct {
	// URL is the HTTP base address, e.g. http://127.0.0.1:8080.
	URL string
	// AdminToken is the bearer token of the admin API in effect.
	AdminToken string
	// TokenFile is where a generated token is kept ("" when configured).
	TokenFile string
	// AccessToken is the executor access token in effect, and
	// AccessTokenFile where it is kept ("" when configured).
	AccessToken     string
	AccessTokenFile string
	// Owner is the scan-lease owner id this process uses.
	Owner string
	// DemoExecutor is the demo executor's address ("" without --demo).
	DemoExecutor string
	// DemoJobs are the ids of the demo jobs.
	DemoJobs []int64
	// AdminPassword is the console password of the "admin" user created
	// on this first start ("" when users already existed).
	AdminPassword string
}

// Defaults of Config.
const (
	DefaultDB               = ".xjob/xjob.db"
	DefaultListen           = "127.0.0.1:8080"
	DefaultShards           = 16
	DefaultFastWorkers      = 200
	DefaultSlowWorkers      = 100
	DefaultRingWorkers      = 8
	DefaultGrace            = 10 * time.Second
	DefaultLogRetentionDays = 30
	DefaultRetryDelay       = callback.DefaultRetryDelay
	DefaultRetryBackoff     = 1.0
	DefaultDemoListen       = "127.0.0.1:8081"
	minTokenLen             = 16 // as on AWS
)

// Defaults of `xjob server` that differ from local mode's.
const (
	DefaultServerListen = ":8080"
	DefaultLeaseTTL     = 5 * time.Second
)

// ServerDefaults returns `xjob server`'s configuration when no flag or
// variable is set: local mode's, listening on every interface, with no
// database until one is named.
func ServerDefaults() Config {
	c := Defaults()
	c.Server, c.DB, c.Listen, c.LeaseTTL, c.DemoListen = true, "", DefaultServerListen, DefaultLeaseTTL, ""
	// A node's memory is sized by its deployment (a container's limit,
	// GOMEMLIMIT in deploy/), not guessed here.
	c.MemoryLimit = 0
	return c
}

// Defaults returns the configuration used when no flag or variable is set.
func Defaults() Config {
	return Config{
		DB: DefaultDB, Listen: DefaultListen, Shards: DefaultShards,
		FastWorkers: DefaultFastWorkers, SlowWorkers: DefaultSlowWorkers, RingWorkers: DefaultRingWorkers,
		Grace: DefaultGrace, LogRetentionDays: DefaultLogRetentionDays, LogLevel: slog.LevelInfo,
		RetryDelay: DefaultRetryDelay, RetryBackoff: DefaultRetryBackoff,
		DemoListen: DefaultDemoListen, MemoryLimit: DefaultMemoryLimit,
	}
}

// option is one setting with its flag and its environment twin.
type option struct {
	flag, env, usage string
	mode             int // modeLocal, modeServer or both (0)
	isBool           bool
	kind             string // the value's type in --help: string, int, duration (bools have none)
	set              func(c *Config, v string) error
	get              func(c *Config) string
}

func strOpt(flag, env, usage string, p func(*Config) *string) option {
	return option{flag: flag, env: env, usage: usage, kind: "string",
		set: func(c *Config, v string) error { *p(c) = v; return nil },
		get: func(c *Config) string { return *p(c) }}
}

func intOpt(flag, env, usage string, p func(*Config) *int) option {
	return option{flag: flag, env: env, usage: usage, kind: "int",
		set: func(c *Config, v string) error {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				return fmt.Errorf("%q is not an integer", v)
			}
			*p(c) = n
			return nil
		},
		get: func(c *Config) string { return strconv.Itoa(*p(c)) }}
}

func durOpt(flag, env, usage string, p func(*Config) *time.Duration) option {
	return option{flag: flag, env: env, usage: usage, kind: "duration",
		set: func(c *Config, v string) error {
			d, err := time.ParseDuration(strings.TrimSpace(v))
			if err != nil {
				return fmt.Errorf("%q is not a duration (e.g. 10s)", v)
			}
			*p(c) = d
			return nil
		},
		get: func(c *Config) string { return p(c).String() }}
}

func boolOpt(flag, env, usage string, p func(*Config) *bool) option {
	return option{flag: flag, env: env, usage: usage, isBool: true,
		set: func(c *Config, v string) error {
			b, err := strconv.ParseBool(strings.TrimSpace(v))
			if err != nil {
				return fmt.Errorf("%q is not a boolean", v)
			}
			*p(c) = b
			return nil
		},
		get: func(c *Config) string { return strconv.FormatBool(*p(c)) }}
}

// Which command an option belongs to; 0 is both.
const (
	modeLocal = 1 + iota
	modeServer
)

func only(mode int, o option) option { o.mode = mode; return o }

// options lists every setting once: its flag, its variable, how to parse
// it, and which of `xjob local` and `xjob server` take it.
func options() []option {
	return []option{
		only(modeLocal, strOpt("db", "XJOB_DB", "SQLite file (created with its directory)",
			func(c *Config) *string { return &c.DB })),
		only(modeServer, strOpt("db", "XJOB_DB", "database URL shared by every node: postgres://user:pass@host:5432/db or mysql://user:pass@host:3306/db (required)",
			func(c *Config) *string { return &c.DB })),
		strOpt("listen", "XJOB_LISTEN", "HTTP listen address (executor API + admin API)",
			func(c *Config) *string { return &c.Listen }),
		strOpt("admin-token", "XJOB_ADMIN_TOKEN", "admin API bearer token (prefer the variable: flags show in ps); default: generated and kept next to the DB",
			func(c *Config) *string { return &c.AdminToken }),
		strOpt("access-token", "XJOB_ACCESS_TOKEN", "XXL-JOB-ACCESS-TOKEN shared with executors (prefer the variable); default: generated and kept next to the DB",
			func(c *Config) *string { return &c.AccessToken }),
		boolOpt("allow-weak-access-token", "XJOB_ALLOW_WEAK_ACCESS_TOKEN",
			"accept an access token shorter than 16 characters or default_token (migrations only; warned at every start)",
			func(c *Config) *bool { return &c.AllowWeakAccessToken }),
		strOpt("glue-policy", "XJOB_GLUE_POLICY", "who creates and edits GLUE jobs: admins, everyone (xxl-job) or off; default admins, everyone when the DB already holds GLUE jobs",
			func(c *Config) *string { return &c.GluePolicy }),
		strOpt("allow-cidrs", "XJOB_ALLOW_CIDRS", "executor address ranges allowed even where refused by default (comma-separated CIDRs)",
			func(c *Config) *string { return &c.AllowCIDRs }),
		strOpt("deny-cidrs", "XJOB_DENY_CIDRS", "executor address ranges never called (comma-separated CIDRs)",
			func(c *Config) *string { return &c.DenyCIDRs }),
		strOpt("aws-target-arns", "XJOB_AWS_TARGET_ARNS", "ARNs AWS jobs may call (Lambda functions, SQS queues, SNS topics, EventBridge buses, Step Functions state machines; comma-separated); default none: AWS jobs refused",
			func(c *Config) *string { return &c.AWSTargetARNs }),
		strOpt("trusted-proxies", "XJOB_TRUSTED_PROXIES", "reverse proxies whose X-Forwarded-For names the client (comma-separated CIDRs; default none: the peer is the client)",
			func(c *Config) *string { return &c.TrustedProxies }),
		boolOpt("allow-any-trigger-address", "XJOB_ALLOW_ANY_TRIGGER_ADDRESS",
			"let a manual trigger's address override name any host (default: only the group's own executors)",
			func(c *Config) *bool { return &c.AnyTriggerAddress }),
		boolOpt("start-declared-jobs", "XJOB_START_DECLARED_JOBS",
			"start the jobs executors declare when they are created (default: created stopped)",
			func(c *Config) *bool { return &c.StartDeclaredJobs }),
		intOpt("shards", "XJOB_SHARDS", "scan shards (fixed when the DB is created)",
			func(c *Config) *int { return &c.Shards }),
		strOpt("alarm-webhook", "XJOB_ALARM_WEBHOOK", "http(s) URL that receives a JSON POST per failed trigger",
			func(c *Config) *string { return &c.AlarmWebhook }),
		strOpt("alarm-webhook-secret", "XJOB_ALARM_WEBHOOK_SECRET", "HMAC-SHA256 secret signing webhook bodies",
			func(c *Config) *string { return &c.AlarmWebhookSecret }),
		intOpt("fast-workers", "XJOB_FAST_WORKERS", "concurrent dispatches on the fast lane",
			func(c *Config) *int { return &c.FastWorkers }),
		intOpt("slow-workers", "XJOB_SLOW_WORKERS", "concurrent dispatches on the slow lane",
			func(c *Config) *int { return &c.SlowWorkers }),
		intOpt("ring-workers", "XJOB_RING_WORKERS", "ring buckets fired at once",
			func(c *Config) *int { return &c.RingWorkers }),
		durOpt("grace", "XJOB_SHUTDOWN_GRACE", "how long shutdown waits for in-flight work",
			func(c *Config) *time.Duration { return &c.Grace }),
		intOpt("log-retention-days", "XJOB_LOG_RETENTION_DAYS", "purge trigger logs older than this (≥ 7, or -1 to keep)",
			func(c *Config) *int { return &c.LogRetentionDays }),
		intOpt("metrics-per-job", "XJOB_METRICS_PER_JOB", "count run results per job in /metrics for at most this many jobs, the rest as job=\"other\" (0: off)",
			func(c *Config) *int { return &c.MetricsPerJob }),
		durOpt("retry-delay", "XJOB_RETRY_DELAY", "wait before a failed trigger's retry (and before re-sending a retry the executor refused as busy)",
			func(c *Config) *time.Duration { return &c.RetryDelay }),
		{flag: "retry-backoff", env: "XJOB_RETRY_BACKOFF", usage: "multiply the retry delay by this per retry already made (1: constant)", kind: "float",
			set: func(c *Config, v string) error {
				f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
				if err != nil {
					return fmt.Errorf("%q is not a number", v)
				}
				c.RetryBackoff = f
				return nil
			},
			get: func(c *Config) string { return strconv.FormatFloat(c.RetryBackoff, 'g', -1, 64) }},
		{flag: "log-level", env: "XJOB_LOG_LEVEL", usage: "debug, info, warn or error", kind: "string",
			set: func(c *Config, v string) error {
				if err := c.LogLevel.UnmarshalText([]byte(strings.TrimSpace(v))); err != nil {
					return fmt.Errorf("%q is not one of debug, info, warn, error", v)
				}
				return nil
			},
			get: func(c *Config) string { return strings.ToLower(c.LogLevel.String()) }},
		only(modeLocal, boolOpt("demo", "XJOB_DEMO", "create a demo group and two demo jobs, served by an in-process executor",
			func(c *Config) *bool { return &c.Demo })),
		only(modeLocal, strOpt("demo-listen", "XJOB_DEMO_LISTEN", "listen address of the demo executor",
			func(c *Config) *string { return &c.DemoListen })),
		only(modeServer, strOpt("admin-token-file", "XJOB_ADMIN_TOKEN_FILE", "file holding the admin token (e.g. a mounted Secret)",
			func(c *Config) *string { return &c.AdminTokenFile })),
		only(modeServer, strOpt("access-token-file", "XJOB_ACCESS_TOKEN_FILE", "file holding the executors' access token",
			func(c *Config) *string { return &c.AccessTokenFile })),
		only(modeServer, strOpt("session-key", "XJOB_SESSION_KEY", "key signing console sessions, the same on every node (default: derived from the admin token)",
			func(c *Config) *string { return &c.SessionKey })),
		only(modeServer, strOpt("session-key-file", "XJOB_SESSION_KEY_FILE", "file holding the session key",
			func(c *Config) *string { return &c.SessionKeyFile })),
		only(modeServer, strOpt("node-id", "XJOB_NODE_ID", "this node's id in the cluster, unique (default: the host name)",
			func(c *Config) *string { return &c.NodeID })),
		only(modeServer, strOpt("public-url", "XJOB_PUBLIC_URL", "address executors and browsers use to reach the cluster (a load balancer's); default http:// and --listen",
			func(c *Config) *string { return &c.PublicURL })),
		only(modeServer, durOpt("lease-ttl", "XJOB_LEASE_TTL", "how long a dead node's shards wait before others take them",
			func(c *Config) *time.Duration { return &c.LeaseTTL })),
		strOpt("pprof-listen", "XJOB_PPROF_LISTEN", "serve net/http/pprof here (loopback only; empty: off)",
			func(c *Config) *string { return &c.PprofListen }),
		{flag: "memory-limit", env: "XJOB_MEMORY_LIMIT", kind: "size",
			usage: "soft limit of the Go runtime's memory, as GOMEMLIMIT (e.g. 512MiB; off: none); GOMEMLIMIT wins over the default",
			set: func(c *Config, v string) error {
				n, err := parseMemoryLimit(v)
				c.MemoryLimit = n
				return err
			},
			get: func(c *Config) string { return formatMemoryLimit(c.MemoryLimit) }},
	}
}

// textValue is an option's raw text, parsed by the option once every
// flag and variable is known, so that one error can name each bad one.
type textValue struct {
	v    *string
	kind string
}

func (t textValue) String() string     { return *t.v }
func (t textValue) Set(s string) error { *t.v = s; return nil }
func (t textValue) Type() string       { return t.kind }

// printUsage prints the flags in the CLI's style: --name TYPE, what it
// does, its variable and default.
func printUsage(w io.Writer, opts []option, def Config) {
	if def.Server {
		fmt.Fprint(w, "Runs one node of an xjob cluster: every scheduling-center service, over a PostgreSQL or MySQL\n"+
			"database shared by every node; the nodes share the scan shards.\n\n"+
			"Usage:\n  xjob server [flags]\n  xjob server drain   (hand this node's shards over; for a preStop hook)\n\n"+
			"Flags (each also read from its environment variable; a flag wins):\n")
	} else {
		fmt.Fprint(w, "Hosts every scheduling-center service in one process on one SQLite file.\n\n"+
			"Usage:\n  xjob local [flags]\n\nFlags (each also read from its environment variable; a flag wins):\n")
	}
	tw := tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)
	for _, o := range opts {
		name := "--" + o.flag
		if !o.isBool {
			name += " " + o.kind
		}
		extra := "env " + o.env
		if d := o.get(&def); d != "" && d != "false" && d != "0" {
			extra += ", default " + d
		}
		fmt.Fprintf(tw, "  %s\t%s (%s)\n", name, o.usage, extra)
	}
	fmt.Fprintf(tw, "  -h, --help\thelp\n")
	_ = tw.Flush()
}

// ErrHelp is returned by Parse for -h/--help, after the usage is printed.
var ErrHelp = pflag.ErrHelp

// Parse builds a Config from command-line args (after "local") and the
// environment (getenv, usually os.LookupEnv). Flags win over variables,
// variables over defaults. The result is validated; every error names the
// flag or variable at fault. Usage goes to usageOut. Flags are parsed with
// pflag, as every other xjob command's are (--name value, --name=value; a
// bool as a bare --name).
func Parse(args []string, getenv func(string) (string, bool), usageOut io.Writer) (Config, error) {
	return parse(Defaults(), args, getenv, usageOut)
}

// ParseServer is Parse for `xjob server`: the options both commands share,
// the server's own, and the secrets read from their files.
func ParseServer(args []string, getenv func(string) (string, bool), usageOut io.Writer) (Config, error) {
	return parse(ServerDefaults(), args, getenv, usageOut)
}

func parse(def Config, args []string, getenv func(string) (string, bool), usageOut io.Writer) (Config, error) {
	cfg := def
	mode := modeLocal
	if def.Server {
		mode = modeServer
	}
	var opts []option
	for _, o := range options() {
		if o.mode == 0 || o.mode == mode {
			opts = append(opts, o)
		}
	}
	fs := pflag.NewFlagSet("xjob", pflag.ContinueOnError)
	fs.SetOutput(usageOut)
	fs.SortFlags = false
	vals := make([]string, len(opts))
	for i, o := range opts {
		vals[i] = o.get(&cfg)
		kind := o.kind
		if o.isBool {
			kind = "bool"
		}
		f := fs.VarPF(textValue{&vals[i], kind}, o.flag, "", o.usage+" (env "+o.env+")")
		if o.isBool {
			f.NoOptDefVal = "true"
		}
	}
	fs.Usage = func() { printUsage(usageOut, opts, def) }
	if err := fs.Parse(args); err != nil {
		return Config{}, err
	}
	if fs.NArg() > 0 {
		return Config{}, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	var errs []error
	for i, o := range opts {
		if fs.Changed(o.flag) {
			if err := o.set(&cfg, vals[i]); err != nil {
				errs = append(errs, fmt.Errorf("--%s: %w", o.flag, err))
			}
			continue
		}
		if getenv == nil {
			continue
		}
		if v, ok := getenv(o.env); ok && v != "" {
			if err := o.set(&cfg, v); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", o.env, err))
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return Config{}, err
	}
	if getenv != nil && !fs.Changed("memory-limit") {
		// An operator's GOMEMLIMIT is already the runtime's limit: the
		// default must not replace it (XJOB_MEMORY_LIMIT or the flag do).
		if v, ok := getenv("XJOB_MEMORY_LIMIT"); !ok || v == "" {
			if v, ok := getenv("GOMEMLIMIT"); ok && v != "" {
				cfg.MemoryLimit = 0
			}
		}
	}
	if cfg.Server {
		if err := cfg.readSecretFiles(); err != nil {
			return Config{}, err
		}
	}
	return cfg, cfg.Validate()
}

// Validate reports every setting that cannot work, naming its flag and
// variable.
func (c *Config) Validate() error {
	var errs []error
	bad := func(flag, env, format string, args ...any) {
		errs = append(errs, fmt.Errorf("--%s (%s): %s", flag, env, fmt.Sprintf(format, args...)))
	}
	switch {
	case strings.TrimSpace(c.DB) == "":
		bad("db", "XJOB_DB", "is required")
	case c.Server:
		if err := checkClusterURL(c.DB); err != nil {
			bad("db", "XJOB_DB", "%v", err)
		}
		c.validateServer(bad)
	case c.DB == ":memory:" || strings.HasPrefix(c.DB, "file:"):
		bad("db", "XJOB_DB", "must be a file path (local mode keeps its queues in the file)")
	}
	if err := checkHostPort(c.Listen); err != nil {
		bad("listen", "XJOB_LISTEN", "%v", err)
	}
	if c.AdminToken != "" && (len(c.AdminToken) < minTokenLen || strings.ContainsAny(c.AdminToken, " \t\r\n")) {
		bad("admin-token", "XJOB_ADMIN_TOKEN", "must be at least %d characters without white space", minTokenLen)
	}
	if strings.ContainsAny(c.AccessToken, "\r\n") {
		bad("access-token", "XJOB_ACCESS_TOKEN", "must not contain line breaks")
	} else if c.AccessToken != "" && WeakToken(c.AccessToken) && !c.AllowWeakAccessToken {
		bad("access-token", "XJOB_ACCESS_TOKEN", "is weak (shorter than %d characters, or xxl-job's published default_token); "+
			"set a long random one on the executors and here, or accept it for a migration with --allow-weak-access-token "+
			"(XJOB_ALLOW_WEAK_ACCESS_TOKEN)", minTokenLen)
	}
	if c.GluePolicy != "" {
		if _, err := auth.ParseGluePolicy(c.GluePolicy); err != nil {
			bad("glue-policy", "XJOB_GLUE_POLICY", "%v", err)
		}
	}
	for _, r := range []struct{ flag, env, v string }{
		{"allow-cidrs", "XJOB_ALLOW_CIDRS", c.AllowCIDRs}, {"deny-cidrs", "XJOB_DENY_CIDRS", c.DenyCIDRs},
		{"trusted-proxies", "XJOB_TRUSTED_PROXIES", c.TrustedProxies},
	} {
		if _, err := egress.ParsePrefixes(r.v); err != nil {
			bad(r.flag, r.env, "%v", err)
		}
	}
	if _, err := target.ParseAllowList(c.AWSTargetARNs); err != nil {
		bad("aws-target-arns", "XJOB_AWS_TARGET_ARNS", "%v", err)
	}
	if c.Shards < 1 || c.Shards > 1024 {
		bad("shards", "XJOB_SHARDS", "must be between 1 and 1024, got %d", c.Shards)
	}
	if c.AlarmWebhook != "" {
		if u, err := url.Parse(c.AlarmWebhook); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("alarm-webhook", "XJOB_ALARM_WEBHOOK", "%q is not an http(s) URL", c.AlarmWebhook)
		}
	} else if c.AlarmWebhookSecret != "" {
		bad("alarm-webhook-secret", "XJOB_ALARM_WEBHOOK_SECRET", "is set but --alarm-webhook (XJOB_ALARM_WEBHOOK) is not")
	}
	for _, w := range []struct {
		flag, env string
		n         int
	}{
		{"fast-workers", "XJOB_FAST_WORKERS", c.FastWorkers},
		{"slow-workers", "XJOB_SLOW_WORKERS", c.SlowWorkers},
		{"ring-workers", "XJOB_RING_WORKERS", c.RingWorkers},
	} {
		if w.n < 1 || w.n > 10000 {
			bad(w.flag, w.env, "must be between 1 and 10000, got %d", w.n)
		}
	}
	if c.Grace < 0 || c.Grace > 10*time.Minute {
		bad("grace", "XJOB_SHUTDOWN_GRACE", "must be between 0s and 10m, got %s", c.Grace)
	}
	if c.RetryDelay < 100*time.Millisecond || c.RetryDelay > callback.MaxRetryDelay {
		bad("retry-delay", "XJOB_RETRY_DELAY", "must be between 100ms and %s, got %s", callback.MaxRetryDelay, c.RetryDelay)
	}
	if !(c.RetryBackoff >= 1 && c.RetryBackoff <= 10) {
		bad("retry-backoff", "XJOB_RETRY_BACKOFF", "must be between 1 and 10, got %g", c.RetryBackoff)
	}
	if c.MetricsPerJob < 0 || c.MetricsPerJob > 1000 {
		bad("metrics-per-job", "XJOB_METRICS_PER_JOB", "must be between 0 and 1000, got %d", c.MetricsPerJob)
	}
	if c.LogRetentionDays != -1 && c.LogRetentionDays < 7 {
		bad("log-retention-days", "XJOB_LOG_RETENTION_DAYS", "must be at least 7 (or -1 to keep logs), got %d", c.LogRetentionDays)
	}
	if c.MemoryLimit != 0 && (c.MemoryLimit < minMemoryLimit || c.MemoryLimit > maxMemoryLimit) {
		bad("memory-limit", "XJOB_MEMORY_LIMIT", "must be off or at least %s, got %d bytes", formatMemoryLimit(minMemoryLimit), c.MemoryLimit)
	}
	if c.PprofListen != "" {
		if err := checkHostPort(c.PprofListen); err != nil {
			bad("pprof-listen", "XJOB_PPROF_LISTEN", "%v", err)
		} else if !isLoopback(c.PprofListen) {
			bad("pprof-listen", "XJOB_PPROF_LISTEN", "must be a loopback address (profiles are not authenticated)")
		}
	}
	if c.Demo {
		if err := checkHostPort(c.DemoListen); err != nil {
			bad("demo-listen", "XJOB_DEMO_LISTEN", "%v", err)
		} else if _, port, _ := net.SplitHostPort(c.DemoListen); c.DemoListen == c.Listen && port != "0" {
			bad("demo-listen", "XJOB_DEMO_LISTEN", "must differ from --listen")
		}
	}
	return errors.Join(errs...)
}

// WeakToken reports an access token shorter than 16 characters or equal
// to xxl-job's published default (the key of its executor RCEs). It looks
// at the token as it is compared, with surrounding white space trimmed
// (the executor API and the executor client trim it, and net/http trims
// header values), so "default_token   " is weak.
func WeakToken(tok string) bool {
	tok = strings.TrimSpace(tok)
	return len(tok) < minTokenLen || tok == "default_token"
}

// egressPolicy is the installation's executor address rule: loopback
// allowed (executors run on this machine), the operator's ranges.
func (c *Config) egressPolicy() egress.Policy {
	allow, _ := egress.ParsePrefixes(c.AllowCIDRs) // checked by Validate
	deny, _ := egress.ParsePrefixes(c.DenyCIDRs)
	// A cluster node's executors run on other machines, and its own
	// loopback holds what an admin must not reach (the database, often);
	// --allow-cidrs 127.0.0.0/8 opens it where executors share the host.
	return egress.Policy{AllowLoopback: !c.Server, Allow: allow, Deny: deny}
}

// ringVisibility is how long a received ring bucket stays hidden from
// other consumers. In a cluster it is the lease TTL, so that the buckets a
// killed node held are fired by another node as soon as its shards pass
// on. A live receiver keeps the buckets it still fires hidden
// (ring.ServeOptions.Visibility), so only a dead node's come back.
func (c *Config) ringVisibility() time.Duration {
	if c.Server && c.LeaseTTL > 0 {
		return c.LeaseTTL
	}
	return ringVisibility
}

func checkHostPort(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q is not host:port", addr)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("%q has no valid port", addr)
	}
	return nil
}

// isLoopback reports whether a listen address only accepts local clients.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// ServerVariables lists the environment variables `xjob server` reads,
// for the deployment files' checks (deploy/).
func ServerVariables() []string {
	var out []string
	for _, o := range options() {
		if o.mode != modeLocal {
			out = append(out, o.env)
		}
	}
	return out
}
