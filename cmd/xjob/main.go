// Command xjob is the xjob CLI: `xjob local` runs every scheduling-center
// service in one process; the other commands talk to an admin over HTTP.
package main

import (
	"os"

	"github.com/xjobdev/xjob/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr))
}
