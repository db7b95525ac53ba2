package local

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// installation is what survives restarts next to the DB file: the stable
// lease owner and the shard count the file was created with.
type installation struct {
	Owner     string `json:"owner"`
	Shards    int    `json:"shards"`
	CreatedAt int64  `json:"createdAt"`
}

// site is an opened installation: the owner this process scans under, the
// admin token in effect, and the lock to release on exit.
type site struct {
	owner          string
	ownerShared    bool // another process holds the lock: scanning under a random owner
	adminToken     string
	tokenFile      string // set when the token comes from the file
	tokenGenerated bool
	// accessTokenFile and accessTokenGenerated: the same for the executor
	// access token, when none was configured.
	accessTokenFile      string
	accessTokenGenerated bool
	unlock               func()
}

func (s *site) close() {
	if s.unlock != nil {
		s.unlock()
	}
}

func statePath(db string) string { return db + ".state.json" }
func lockPath(db string) string  { return db + ".lock" }
func tokenPath(db string) string { return db + ".admin-token" }
func accessTokenPath(db string) string {
	return db + ".access-token"
}

// openSite prepares the files next to cfg.DB: the directory (with a
// .gitignore when this creates it), the lock, the installation state and the
// admin token.
func openSite(cfg *Config, logger *slog.Logger) (*site, error) {
	dir := filepath.Dir(cfg.DB)
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("local: create %s: %w", dir, err)
		}
		// Data directories inside a checkout must never be committed.
		_ = os.WriteFile(filepath.Join(dir, ".gitignore"), []byte("*\n"), 0o600)
	}
	s := &site{}
	unlock, locked, err := lockFile(lockPath(cfg.DB))
	if err != nil {
		return nil, fmt.Errorf("local: lock %s: %w", lockPath(cfg.DB), err)
	}
	s.unlock = unlock
	inst, err := loadOrCreate(statePath(cfg.DB), func() ([]byte, error) {
		return json.MarshalIndent(installation{Owner: "local-" + randomHex(8), Shards: cfg.Shards, CreatedAt: time.Now().UnixMilli()}, "", "  ")
	})
	if err != nil {
		s.close()
		return nil, err
	}
	var st installation
	if err := json.Unmarshal(inst, &st); err != nil || st.Owner == "" || st.Shards < 1 {
		s.close()
		return nil, fmt.Errorf("local: %s is damaged (delete it to start a new installation id): %v", statePath(cfg.DB), err)
	}
	if st.Shards != cfg.Shards {
		s.close()
		return nil, fmt.Errorf("local: --shards (XJOB_SHARDS) is %d but %s was created with %d shards; jobs are placed by shard, so the count cannot change",
			cfg.Shards, cfg.DB, st.Shards)
	}
	s.owner = st.Owner
	if !locked {
		// Another process runs on this file: never share its lease owner,
		// or both would think they hold the same shards.
		s.owner = st.Owner + "-" + randomHex(4)
		s.ownerShared = true
	}
	s.adminToken = cfg.AdminToken
	if s.adminToken == "" {
		tok, file, created, err := storedToken(tokenPath(cfg.DB), logger)
		if err != nil {
			s.close()
			return nil, err
		}
		s.adminToken, s.tokenFile, s.tokenGenerated = tok, file, created
	}
	if cfg.AccessToken == "" {
		// Executor routes are never open: without a configured token one
		// is generated once and kept, for executors to be given.
		tok, file, created, err := storedToken(accessTokenPath(cfg.DB), logger)
		if err != nil {
			s.close()
			return nil, err
		}
		cfg.AccessToken, s.accessTokenFile, s.accessTokenGenerated = tok, file, created
	}
	return s, nil
}

// storedToken reads the token kept in path, generating it (mode 0600) on
// first use. A token file others may read or write is reported: the token
// is only as secret as the file.
func storedToken(path string, logger *slog.Logger) (tok, file string, created bool, err error) {
	b, err := loadOrCreate(path, func() ([]byte, error) {
		created = true
		return []byte(randomHex(24) + "\n"), nil
	})
	if err != nil {
		return "", "", false, err
	}
	tok = strings.TrimSpace(string(b))
	if len(tok) < minTokenLen {
		return "", "", false, fmt.Errorf("local: %s holds a token shorter than %d characters", path, minTokenLen)
	}
	if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o077 != 0 {
		logger.Warn("token file is readable or writable by others; chmod 600 it", "file", path, "mode", fi.Mode().Perm().String())
	}
	return tok, path, created, nil
}

// loadOrCreate returns the content of path, first creating it (mode 0600)
// from create when it does not exist. Creation is atomic: a temporary
// file is hard-linked into place, so a concurrent starter either wins or
// reads the winner's complete file.
func loadOrCreate(path string, create func() ([]byte, error)) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err == nil {
		return b, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("local: read %s: %w", path, err)
	}
	content, err := create()
	if err != nil {
		return nil, fmt.Errorf("local: create %s: %w", path, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return nil, fmt.Errorf("local: create %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if err = tmp.Chmod(0o600); err == nil {
		_, err = tmp.Write(content)
		if err == nil {
			err = tmp.Sync()
		}
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("local: write %s: %w", path, err)
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return loadOrCreate(path, create)
		}
		return nil, fmt.Errorf("local: create %s: %w", path, err)
	}
	return content, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go ≥ 1.24)
	return hex.EncodeToString(b)
}
