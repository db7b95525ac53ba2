// Command xjob is the xjob CLI; `xjob local` (issue "Local mode") will host
// every scheduling-center service in one process.
package main

import (
	"os"

	"github.com/xjobdev/xjob/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr))
}
