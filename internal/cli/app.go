package cli

// The commands that talk to a server (job, group, executor, log, report,
// metrics) are built with github.com/spf13/cobra: nested subcommands with
// persistent global flags, GNU-style flags mixed freely with positional
// arguments, generated help and shell completion. (kong, the other
// candidate, is lighter but its struct grammar makes "which flags did the
// person set" — what `job update` merges on — less direct than pflag's
// Changed.) `cron next` (cli.go) is one of them and needs no server;
// `local` and `server` parse their own flags and variables (with pflag, in
// package local) and are only listed here for help.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/pkg/adminclient"
	"github.com/xjobdev/xjob/pkg/clock"
)

// Defaults of the global flags.
const (
	defaultServer = "http://127.0.0.1:8080"
	envServer     = "XJOB_SERVER"
	envToken      = "XJOB_TOKEN"
	// envAdminToken is the variable `xjob local` reads its admin token
	// from; the CLI falls back to it so that one export serves both.
	envAdminToken = "XJOB_ADMIN_TOKEN"
)

// Exit codes (see Main).
const (
	exitOK      = 0
	exitFailed  = 1
	exitUsage   = 2
	httpTimeout = 30 * time.Second
)

// env is what a command may touch of the outside world, injected so that
// tests run commands in parallel against a test server with a fixed clock
// and time zone.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
	clock          clock.Clock
	loc            *time.Location // where instants are shown and dates read
	httpClient     *http.Client
}

// app holds the global flags of one run.
type app struct {
	env
	server, token, output string
}

// usageError is a mistake in the command line: exit code 2 and the usage.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// failure is a command that ran and failed: exit code 1, no usage.
type failure struct{ err error }

func (e failure) Error() string { return e.err.Error() }
func (e failure) Unwrap() error { return e.err }

// badInput is input the command could not use (a manifest with
// problems): exit code 2 like a usage error, but the message lists the
// problems and no usage text follows.
type badInput struct{ err error }

func (e badInput) Error() string { return e.err.Error() }
func (e badInput) Unwrap() error { return e.err }

// exitCode ends the run with a code whose message was already printed (the
// commands delegated to cli.go).
type exitCode int

func (e exitCode) Error() string { return "exit " + strconv.Itoa(int(e)) }

// runServerCommands runs every command not handled by Main's own branches,
// with the process's environment, stopping on SIGINT/SIGTERM.
func runServerCommands(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return run(ctx, args, env{
		stdin: os.Stdin, stdout: stdout, stderr: stderr,
		getenv: os.Getenv, clock: clock.Real{}, loc: time.Local,
	})
}

// run parses args, runs the command and returns the exit code.
func run(ctx context.Context, args []string, e env) int {
	stdout, stderr := newSafeWriter(e.stdout), newSafeWriter(e.stderr)
	defer stdout.Flush()
	defer stderr.Flush()
	e.stdout, e.stderr = stdout, stderr
	a := &app{env: e}
	root := a.rootCommand()
	root.SetArgs(args)
	root.SetIn(e.stdin)
	root.SetOut(e.stdout)
	root.SetErr(e.stderr)
	if len(args) == 0 {
		fmt.Fprint(e.stderr, root.UsageString())
		return exitOK
	}
	cmd, err := root.ExecuteContextC(ctx)
	var code exitCode
	var fail failure
	var bad badInput
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &code):
		return int(code)
	case errors.As(err, &bad) && a.output != "json":
		fmt.Fprintf(e.stderr, "Error: %v\n", bad.err)
		return exitUsage
	case errors.As(err, &fail):
		a.printFailure(fail.err)
		return exitFailed
	case a.output == "json" || jsonRequested(args):
		a.printJSONError(err, 0)
		return exitUsage
	default:
		fmt.Fprintf(e.stderr, "Error: %v\n", err)
		if cmd == nil {
			cmd = root
		}
		fmt.Fprint(e.stderr, cmd.UsageString())
		return exitUsage
	}
}

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "xjob",
		Short: "xjob — a serverless, xxl-job-compatible job scheduler",
		Long: `xjob — a serverless, xxl-job-compatible job scheduler.

Commands other than "cron next" and "local" talk to an xjob admin API:
--server (env XJOB_SERVER, default ` + defaultServer + `) and --token (env XJOB_TOKEN,
or else XJOB_ADMIN_TOKEN, the variable "xjob local" reads).
Exit codes: 0 success, 1 the command failed (server error shown), 2 bad usage.`,
		SilenceErrors: true,
		SilenceUsage:  true,
		Args:          noArgs,
		RunE:          func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
		Version:       Version(),
		PersistentPreRunE: func(*cobra.Command, []string) error {
			if a.output != "table" && a.output != "json" {
				return usagef("-o must be table or json, got %q", a.output)
			}
			return nil
		},
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.SetVersionTemplate("xjob {{.Version}}\n")
	pf := root.PersistentFlags()
	pf.StringVar(&a.server, "server", "", "admin API address (env "+envServer+", default "+defaultServer+")")
	pf.StringVar(&a.token, "token", "", "admin API bearer token (env "+envToken+", else "+envAdminToken+")")
	pf.StringVarP(&a.output, "output", "o", "table", "output format: table or json")

	root.AddCommand(a.jobCommand(), a.groupCommand(), a.executorCommand(), a.logCommand(),
		a.reportCommand(), a.metricsCommand(), a.applyCommand(), a.exportCommand(), a.importCommand(), a.dbCommand(), versionCommand(),
		a.cronCommand(), delegated("local", "Run every scheduling-center service in one process on a SQLite file"),
		delegated("server", "Run one node of a cluster over a shared PostgreSQL or MySQL database"))
	return root
}

// delegated lists `local` and `server`, which Main hands to package local
// (their flags and variables are parsed there), so that they show in help;
// reached through cobra only when global flags come first, it hands the
// arguments back to Main.
func delegated(name, short string) *cobra.Command {
	return &cobra.Command{
		Use:                name + " [args]",
		Short:              short,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return exitCode(Main(append([]string{name}, args...), cmd.OutOrStdout(), cmd.ErrOrStderr()))
		},
	}
}

// parentCommand is a command that only groups subcommands: with no
// arguments it shows its help, with an unknown one it is a usage error
// (cobra would otherwise print help and succeed).
func parentCommand(name, short string) *cobra.Command {
	return &cobra.Command{
		Use:   name,
		Short: short,
		Args:  cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usagef("unknown command %q for %q", args[0], cmd.CommandPath())
			}
			return cmd.Help()
		},
	}
}

func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usagef("unknown command %q for %q", args[0], cmd.CommandPath())
	}
	return nil
}

// do wraps a command body: errors it returns are failures (exit 1) unless
// they are usage errors.
func (a *app) do(body func(ctx context.Context, c *adminclient.Client, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		c, err := a.client()
		if err != nil {
			return err
		}
		if err := body(cmd.Context(), c, args); err != nil {
			var u usageError
			var bad badInput
			if errors.As(err, &u) || errors.As(err, &bad) {
				return err
			}
			return failure{err}
		}
		return nil
	}
}

// doID is do for the commands whose one argument is a numeric id.
func (a *app) doID(body func(ctx context.Context, c *adminclient.Client, id int64) error) func(*cobra.Command, []string) error {
	return a.do(func(ctx context.Context, c *adminclient.Client, args []string) error {
		id, err := parseID(args[0])
		if err != nil {
			return err
		}
		return body(ctx, c, id)
	})
}

// client builds the API client from the global flags and the environment.
func (a *app) client() (*adminclient.Client, error) {
	server, token := a.server, a.token
	if server == "" {
		server = a.getenv(envServer)
	}
	if server == "" {
		server = defaultServer
	}
	if !strings.Contains(server, "://") {
		server = "http://" + server // XJOB_SERVER=127.0.0.1:8080 as people type it
	}
	if token == "" {
		token = a.getenv(envToken)
	}
	if token == "" {
		token = a.getenv(envAdminToken)
	}
	hc := a.httpClient
	if hc == nil {
		hc = &http.Client{Timeout: httpTimeout}
	}
	c, err := adminclient.New(server, token, adminclient.WithHTTPClient(hc), adminclient.WithUserAgent("xjob-cli"))
	if err != nil {
		return nil, usagef("--server: %v", err)
	}
	a.server = c.BaseURL()
	return c, nil
}

// printFailure shows a failed command plainly: the server's status and
// message, one line per field problem, and a hint for the usual causes.
func (a *app) printFailure(err error) {
	if a.output == "json" {
		status := 0
		if apiErr, ok := adminclient.AsAPIError(err); ok {
			status = apiErr.Status
		}
		a.printJSONError(err, status)
		return
	}
	if apiErr, ok := adminclient.AsAPIError(err); ok {
		msg := apiErr.Headline()
		if msg == "" {
			msg = http.StatusText(apiErr.Status)
		}
		fmt.Fprintf(a.stderr, "Error: %s (HTTP %d)\n", msg, apiErr.Status)
		for _, p := range apiErr.Problems {
			fmt.Fprintf(a.stderr, "  %s: %s\n", p.Field, p.Message)
		}
		switch apiErr.Status {
		case http.StatusUnauthorized:
			fmt.Fprintln(a.stderr, "Hint: pass --token or set "+envToken+" (or "+envAdminToken+") to the admin token the server printed at start.")
		case http.StatusConflict:
			if strings.Contains(strings.ToLower(msg), "version") || strings.Contains(strings.ToLower(msg), "changed") {
				fmt.Fprintln(a.stderr, "Hint: it changed since it was read; run the command again.")
			}
		}
		return
	}
	fmt.Fprintf(a.stderr, "Error: %v\n", err)
	if isUnreachable(err) {
		fmt.Fprintf(a.stderr, "Hint: is an xjob server running at %s? Set --server or %s.\n", a.server, envServer)
	}
}

// printJSONError writes a failed command as one JSON object on stderr
// under -o json, so that a script reads errors the way it reads results:
// {"error":"…","status":404,"problems":[…],"usage":true}.
func (a *app) printJSONError(err error, status int) {
	out := struct {
		Error    string              `json:"error"`
		Status   int                 `json:"status,omitempty"`
		Problems []xjob.FieldProblem `json:"problems,omitempty"`
		Usage    bool                `json:"usage,omitempty"`
	}{Error: err.Error(), Status: status}
	var u usageError
	out.Usage = errors.As(err, &u)
	if apiErr, ok := adminclient.AsAPIError(err); ok {
		out.Problems = apiErr.Problems
	}
	_ = json.NewEncoder(a.stderr).Encode(out)
}

// jsonRequested reports whether args ask for -o json, for errors found
// before the flags were parsed.
func jsonRequested(args []string) bool {
	for i, arg := range args {
		switch {
		case arg == "-ojson" || arg == "--output=json" || arg == "-o=json":
			return true
		case (arg == "-o" || arg == "--output") && i+1 < len(args) && args[i+1] == "json":
			return true
		}
	}
	return false
}

// isUnreachable reports whether err is a transport error (refused, unknown
// host, timeout): no server answered, rather than a server error.
func isUnreachable(err error) bool {
	var ue *url.Error
	return errors.As(err, &ue)
}
