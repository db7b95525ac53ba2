package cli

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is set at build time for releases:
//
//	go build -ldflags "-X github.com/xjobdev/xjob/internal/cli.version=v1.2.3" ./cmd/xjob
//
// Without it, Version reads the module version and VCS stamp that the Go
// toolchain records in the binary.
var version string

// Version is this binary's version: the ldflags value, else the module
// version with the VCS revision (and "+dirty" for uncommitted changes).
func Version() string {
	if version != "" {
		return version
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown)"
	}
	v := info.Main.Version
	var rev, dirty string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	if rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		v += " (" + rev + dirty + ")"
	}
	return v + " " + info.GoVersion
}

func versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the xjob version (also --version)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "xjob %s\n", Version())
			return err
		},
	}
}
