package executor

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// Job logs hold whatever handlers print (parameters, output, sometimes
// secrets), and the callback spool decides which results reach the admin.
// A shared, predictable directory under the temp dir would let another
// local user read the logs or plant spool files, so the default is
// per-user and every directory the executor uses must be private.

// defaultLogDirs lists the default LogDir candidates, best first, each
// with the directory from which privacy is checked: the user's cache
// directory, then a uid-suffixed directory under the temp dir (for
// environments without a home, such as Lambda).
func defaultLogDirs() (dirs, roots []string) {
	if d, err := os.UserCacheDir(); err == nil && filepath.IsAbs(d) {
		root := filepath.Join(d, "xjob-executor")
		dirs, roots = append(dirs, filepath.Join(root, "jobhandler")), append(roots, root)
	}
	root := filepath.Join(os.TempDir(), "xjob-executor-"+strconv.Itoa(os.Getuid()))
	return append(dirs, filepath.Join(root, "jobhandler")), append(roots, root)
}

// chooseLogDir returns the first default candidate that can be created
// privately. A candidate that exists but is not private is an error, not
// a reason to try the next one: someone may be attacking it.
func chooseLogDir() (string, error) {
	dirs, roots := defaultLogDirs()
	var errs []error
	for i, dir := range dirs {
		err := privateDir(dir, roots[i])
		if err == nil {
			return dir, nil
		}
		if errors.Is(err, errNotPrivate) {
			return "", err
		}
		errs = append(errs, err)
	}
	return "", fmt.Errorf("executor config: no usable default LogDir: %w", errors.Join(errs...))
}

var errNotPrivate = errors.New("not private")

// privateDir creates dir (mode 0700) and checks that dir and every
// directory between root and dir are real directories owned by this user
// and writable by nobody else.
func privateDir(dir, root string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("executor config: create %s: %w", dir, err)
	}
	for p := dir; ; p = filepath.Dir(p) {
		if err := checkPrivate(p); err != nil {
			return err
		}
		if p == root || p == filepath.Dir(p) {
			return nil
		}
	}
}

// checkPrivate fails when path is a symlink or not a directory, is owned
// by another user, or is group- or world-writable.
func checkPrivate(path string) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return fmt.Errorf("executor config: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("executor config: %s is not a directory (%v): %w", path, fi.Mode().Type(), errNotPrivate)
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("executor config: %s is writable by others (mode %v); chmod 700 it or set LogDir/SpoolDir: %w", path, fi.Mode().Perm(), errNotPrivate)
	}
	if uid, ok := fileOwner(fi); ok && uid != os.Getuid() {
		return fmt.Errorf("executor config: %s is owned by uid %d, not this user (uid %d); set LogDir/SpoolDir to a directory of your own: %w", path, uid, os.Getuid(), errNotPrivate)
	}
	return nil
}
