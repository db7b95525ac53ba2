// Package harness is the machinery behind `make bench` and `make cost`
// (bench/cmd/xjobbench, bench/cmd/xjobcost): it builds and runs `xjob
// local` (or the emulated AWS deployment of internal/testenv/awsstack)
// against a fast loopback executor that records every run it receives,
// drives the scenarios, and turns the stored trigger logs and the
// executor's receipts into the figures a run reports — lost, duplicate
// and misfired fires, fire lateness, throughput, CPU and memory, and the
// metered AWS cost — as a table and as JSON under bench/results.
package harness
