package local

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// ErrRunning is LockInstallation's refusal: a process holds the lock
// that `xjob local` holds while it runs on the file.
var ErrRunning = errors.New("xjob local is running on it (its lock file is held): stop it first")

// LockInstallation takes the lock `xjob local` holds on db while it runs,
// for a tool that must be the file's only writer (`xjob db copy`): while
// it is held, an `xjob local` started on the file scans under a borrowed
// owner, and the tool knows none was running when it began. The error is
// ErrRunning (wrapped) when another process holds it.
func LockInstallation(db string) (unlock func(), err error) {
	unlock, locked, err := lockFile(lockPath(db))
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", lockPath(db), err)
	}
	if !locked {
		unlock()
		return nil, fmt.Errorf("%s: %w", db, ErrRunning)
	}
	return unlock, nil
}

// InstallationShards returns the scan shard count the installation on
// db was created with, from the state file beside it; ok is false when
// there is none (the file was never run by `xjob local`).
func InstallationShards(db string) (shards int, ok bool, err error) {
	b, err := os.ReadFile(statePath(db))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("read %s: %w", statePath(db), err)
	}
	var st installation
	if err := json.Unmarshal(b, &st); err != nil || st.Shards < 1 {
		return 0, false, fmt.Errorf("%s is damaged: %v", statePath(db), err)
	}
	return st.Shards, true, nil
}
