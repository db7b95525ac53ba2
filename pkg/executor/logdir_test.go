package executor

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestDefaultLogDirIsPerUser: without LogDir the executor logs under the
// user's cache directory, created 0700, with 0600 files; not in a shared,
// predictable directory of the temp dir.
func TestDefaultLogDirIsPerUser(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	t.Setenv("HOME", cache)
	e, err := New(Config{AccessToken: tok16})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(e.cfg.LogDir, cache+string(filepath.Separator)) {
		t.Fatalf("LogDir %s, want under the user cache dir %s", e.cfg.LogDir, cache)
	}
	for _, d := range []string{filepath.Dir(e.cfg.LogDir), e.cfg.LogDir, e.cfg.SpoolDir} {
		fi, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: mode %v, want drwx------", d, fi.Mode().Perm())
		}
	}
	when := time.Date(2024, 3, 1, 12, 0, 0, 0, time.Local).UnixMilli()
	e.logs.open(when, 7).writeLine(time.Now(), "h", 7, "secret output")
	p := e.logs.path(when, 7)
	for _, x := range []string{p, filepath.Dir(p)} {
		fi, err := os.Stat(x)
		if err != nil {
			t.Fatal(err)
		}
		want := os.FileMode(0o600)
		if fi.IsDir() {
			want = 0o700
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", x, fi.Mode().Perm(), want)
		}
	}
}

// TestLogDirNotPrivateFailsFast: a log or spool directory another user
// owns or may write to is refused at New with an error naming it, for the
// default location (which a local attacker can predict) and a configured one.
func TestLogDirNotPrivateFailsFast(t *testing.T) {
	type setup func(t *testing.T, dir string)
	chmod := func(mode os.FileMode) setup {
		return func(t *testing.T, dir string) {
			if err := os.Chmod(dir, mode); err != nil {
				t.Fatal(err)
			}
		}
	}
	foreign := func(t *testing.T, dir string) {
		if os.Getuid() != 0 {
			t.Skip("needs root to give a directory to another user")
		}
		if err := os.Chown(dir, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	symlink := func(t *testing.T, dir string) {
		if err := os.Remove(dir); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(t.TempDir(), dir); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name    string
		prepare setup
		want    string
	}{
		{"world-writable", chmod(0o777), "writable by others"},
		{"group-writable", chmod(0o770), "writable by others"},
		{"sticky world-writable", chmod(0o1777), "writable by others"},
		{"owned by another user", foreign, "owned by uid 65534"},
		{"symlink", symlink, "not a directory"},
	} {
		t.Run("default/"+tc.name, func(t *testing.T) {
			cache := t.TempDir()
			t.Setenv("XDG_CACHE_HOME", cache)
			t.Setenv("HOME", cache)
			root := filepath.Join(cache, "xjob-executor")
			if err := os.Mkdir(root, 0o700); err != nil {
				t.Fatal(err)
			}
			tc.prepare(t, root)
			_, err := New(Config{AccessToken: tok16})
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), root) {
				t.Fatalf("New: %v, want an error naming %s: %s", err, root, tc.want)
			}
		})
		t.Run("configured/"+tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "logs")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			tc.prepare(t, dir)
			_, err := New(Config{AccessToken: tok16, LogDir: dir})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New: %v, want %q", err, tc.want)
			}
		})
		t.Run("spool/"+tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "spool")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			tc.prepare(t, dir)
			_, err := New(Config{AccessToken: tok16, LogDir: t.TempDir(), SpoolDir: dir})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New: %v, want %q", err, tc.want)
			}
		})
	}
}

// TestDefaultLogDirWithoutCacheDir: without a home (Lambda), the default
// is a uid-suffixed directory under the temp dir, checked the same way.
func TestDefaultLogDirWithoutCacheDir(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", "")
	t.Setenv("HOME", "")
	t.Setenv("TMPDIR", tmp)
	e, err := New(Config{AccessToken: tok16})
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(tmp, "xjob-executor-"+strconv.Itoa(os.Getuid()), "jobhandler")
	if e.cfg.LogDir != want {
		t.Fatalf("LogDir %s, want %s", e.cfg.LogDir, want)
	}
	if err := os.Chmod(filepath.Dir(want), 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Config{AccessToken: tok16}); !errors.Is(err, errNotPrivate) {
		t.Fatalf("New with a world-writable %s: %v, want a refusal", filepath.Dir(want), err)
	}
}
