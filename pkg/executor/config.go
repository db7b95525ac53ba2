package executor

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/xjobdev/xjob/internal/fallback"
	"github.com/xjobdev/xjob/pkg/clock"
)

// Defaults carried over from xxl-job 2.4 (RegistryConfig.BEAT_TIMEOUT and friends).
const (
	DefaultListenAddr            = ":9999"
	DefaultBeatInterval          = 30 * time.Second
	DefaultCallbackRetryInterval = 30 * time.Second
	DefaultIdleTimeout           = 90 * time.Second
	DefaultAdminTimeout          = 3 * time.Second
	DefaultLogRetentionDays      = 30
	DefaultInlineReserve         = 2 * time.Second

	// MaxBodyBytes is the request body limit of xxl-job's embedded server
	// (HttpObjectAggregator(5 MiB)); larger bodies are refused with HTTP 413.
	MaxBodyBytes = 5 << 20
)

// Config is everything an Executor needs. The zero value of every field
// means "use the documented default"; New validates the result once.
type Config struct {
	// AdminAddresses are the scheduling centers' root addresses, tried in
	// order for callbacks and registration (first 200 wins), e.g.
	// "http://127.0.0.1:8080/xxl-job-admin" for an xxl-job 2.x admin or the
	// xjob API address. Empty: results cannot be delivered and are spooled.
	AdminAddresses []string
	// AccessToken is sent as XXL-JOB-ACCESS-TOKEN and required on incoming
	// requests. New refuses an empty one unless AllowNoToken is set: an
	// executor without a token runs any handler for anyone who reaches it.
	AccessToken string
	// AllowNoToken lets New accept an empty AccessToken (xxl-job's
	// default, where the check is off). Set it only for an executor that
	// nothing but the admin can reach; New logs a warning.
	AllowNoToken bool
	// AppName is the executor group's AppName used for registration.
	// Empty disables the registry heartbeat (manual address groups).
	AppName string
	// Address is the URL registered with the admin, e.g.
	// "http://10.0.0.5:9999/". Empty: ListenAndServe derives
	// http://{ip}:{port}/ from the listener; Start fails if AppName is set
	// and no address is known.
	Address string
	// ListenAddr is where ListenAndServe listens. Default ":9999".
	ListenAddr string
	// LogDir holds per-run logs as {LogDir}/{yyyy-MM-dd}/{logId}.log.
	// Default {os.UserCacheDir()}/xjob-executor/jobhandler, or
	// {os.TempDir()}/xjob-executor-{uid}/jobhandler without a cache
	// directory. It is created 0700, log files 0600; New fails when it
	// (or, for the default, xjob-executor*) is a symlink, owned by another
	// user, or group/world-writable.
	LogDir string
	// LogRetentionDays deletes date folders of LogDir older than this many
	// days, once a day. 0 means 30; a negative value disables cleanup;
	// 1 and 2 are refused (xxl-job also refuses < 3, so that logs of
	// running jobs survive).
	LogRetentionDays int
	// SpoolDir keeps callback batches no admin accepted, as JSON files,
	// until the retry loop delivers them. Default {LogDir}/callbacklog.
	// Checked like LogDir.
	SpoolDir string
	// JobLogMirror, if set, also receives every job log line, e.g.
	// os.Stdout on Lambda so the lines reach CloudWatch Logs.
	JobLogMirror io.Writer
	// Location is the time zone of the log date folders. xxl-job uses the
	// executor's zone; default time.Local.
	Location *time.Location
	// BeatInterval is the registry heartbeat period. Default 30 s.
	BeatInterval time.Duration
	// CallbackRetryInterval is how often spooled batches are re-sent. Default 30 s.
	CallbackRetryInterval time.Duration
	// IdleTimeout reaps a job's worker after this long without work. Default 90 s.
	// (The HTTP server's own idle-connection timeout is separate: 90 s.)
	IdleTimeout time.Duration
	// AdminTimeout bounds each call to an admin (connect + read). Default 3 s.
	AdminTimeout time.Duration
	// InlineReserve is the time kept back from an inline (Lambda) run's
	// deadline to send the callback. Default 2 s.
	InlineReserve time.Duration
	// HTTPClient calls the admins. Default: a client with AdminTimeout.
	// It is copied and its CheckRedirect replaced: a redirect is never
	// followed, since following one would re-send the access token and
	// the body to wherever the Location points.
	HTTPClient *http.Client
	// Clock drives timeouts, idle reaping, heartbeats and retries. Default clock.Real.
	Clock clock.Clock
	// Logger receives the executor's own diagnostics (not job logs). Default slog.Default().
	Logger *slog.Logger
}

// withDefaults returns c with every zero field replaced by its default and
// checks what a person could have mistyped.
func (c Config) withDefaults() (Config, error) {
	// Trimmed as every side compares it (net/http trims header values), so
	// that "default_token  " is both weak and refused as such.
	c.AccessToken = strings.TrimSpace(c.AccessToken)
	if c.AccessToken == "" && !c.AllowNoToken {
		return c, errors.New("executor config: AccessToken is empty; set it (the admin's XXL-JOB-ACCESS-TOKEN), " +
			"or set AllowNoToken to run without one")
	}
	if c.ListenAddr == "" {
		c.ListenAddr = DefaultListenAddr
	}
	if c.LogDir == "" {
		dir, err := chooseLogDir()
		if err != nil {
			return c, err
		}
		c.LogDir = dir
	} else if err := privateDir(c.LogDir, c.LogDir); err != nil {
		return c, err
	}
	if c.SpoolDir == "" {
		c.SpoolDir = filepath.Join(c.LogDir, "callbacklog")
	}
	if err := privateDir(c.SpoolDir, c.SpoolDir); err != nil {
		return c, err
	}
	if c.LogRetentionDays == 0 {
		c.LogRetentionDays = DefaultLogRetentionDays
	}
	if c.LogRetentionDays > 0 && c.LogRetentionDays < 3 {
		return c, fmt.Errorf("executor config: LogRetentionDays %d: must be >= 3, 0 (default 30) or negative (off)", c.LogRetentionDays)
	}
	if c.Location == nil {
		c.Location = time.Local
	}
	if c.BeatInterval <= 0 {
		c.BeatInterval = DefaultBeatInterval
	}
	if c.CallbackRetryInterval <= 0 {
		c.CallbackRetryInterval = DefaultCallbackRetryInterval
	}
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	if c.AdminTimeout <= 0 {
		c.AdminTimeout = DefaultAdminTimeout
	}
	if c.InlineReserve <= 0 {
		c.InlineReserve = DefaultInlineReserve
	}
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{Timeout: c.AdminTimeout}
	} else {
		copied := *c.HTTPClient
		c.HTTPClient = &copied
	}
	c.HTTPClient.CheckRedirect = noRedirects
	c.Clock = fallback.Clock(c.Clock)
	c.Logger = fallback.Logger(c.Logger)
	addrs := make([]string, 0, len(c.AdminAddresses))
	for _, a := range c.AdminAddresses {
		a = strings.TrimSpace(a)
		if a == "" {
			continue
		}
		u, err := url.Parse(a)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return c, fmt.Errorf("executor config: AdminAddresses %q: want an http(s) URL", a)
		}
		addrs = append(addrs, withSlash(a))
	}
	c.AdminAddresses = addrs
	if c.Address != "" {
		c.Address = withSlash(c.Address)
	}
	return c, nil
}

// noRedirects makes a 3xx an admin's final answer (a failed call).
func noRedirects(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// withSlash forces the trailing "/" xxl-job adds before appending a path.
func withSlash(s string) string {
	if strings.HasSuffix(s, "/") {
		return s
	}
	return s + "/"
}
