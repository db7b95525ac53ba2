package awsstack

import "github.com/xjobdev/xjob/internal/testenv/emulator"

// ProcessUsage is what the kernel accounted to one emulator process (see
// Deployment.EmulatorUsage); it is the emulator package's Usage, named here
// so that callers of the deployment need not import that package.
type ProcessUsage = emulator.Usage
