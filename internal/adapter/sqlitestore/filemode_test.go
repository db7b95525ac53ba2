package sqlitestore

import (
	"os"
	"path/filepath"
	"testing"
)

// TestFileModes: the database, its WAL and its shared-memory file hold job
// parameters and GLUE source; other local users must not read them, whether
// the file is new or was left 0644 by an older version.
func TestFileModes(t *testing.T) {
	for _, tc := range []struct {
		name     string
		existing os.FileMode // 0: the file does not exist yet
	}{
		{"new file", 0},
		{"existing 0644 file", 0o644},
		{"existing 0666 file", 0o666},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "x.db")
			if tc.existing != 0 {
				for _, p := range []string{path, path + "-wal", path + "-shm"} {
					if err := os.WriteFile(p, nil, tc.existing); err != nil {
						t.Fatal(err)
					}
					_ = os.Chmod(p, tc.existing) // past the umask
				}
			}
			// Opening migrates the schema: SQLite creates the WAL and SHM.
			openAt(t, path, Options{})
			for _, p := range []string{path, path + "-wal", path + "-shm"} {
				fi, err := os.Stat(p)
				if err != nil {
					t.Fatalf("%s: %v", p, err)
				}
				if got := fi.Mode().Perm(); got != 0o600 {
					t.Errorf("%s: mode %v, want -rw-------", filepath.Base(p), got)
				}
			}
		})
	}
}
