package auth

import (
	"context"
	"crypto/md5"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/driver"
)

// Legacy password hashes: what xxl-job stored in xxl_job_user.password
// (hex MD5 of the password up to 3.1, hex SHA-256 from 3.2), kept by an
// import so that its users sign in with their old passwords. The first
// sign-in that matches one replaces it with an argon2id hash.
const (
	legacyMD5    = "$xxl-md5$"
	legacySHA256 = "$xxl-sha256$"
)

// LegacyHash turns an xxl_job_user.password value into the hash xjob
// stores for it; false when it is neither an MD5 nor a SHA-256 hex digest.
func LegacyHash(xxlPassword string) (string, bool) {
	h := strings.ToLower(strings.TrimSpace(xxlPassword))
	if _, err := hex.DecodeString(h); err != nil {
		return "", false
	}
	switch len(h) {
	case 2 * md5.Size:
		return legacyMD5 + h, true
	case 2 * sha256.Size:
		return legacySHA256 + h, true
	}
	return "", false
}

// validLegacy reports a hash of LegacyHash's form.
func validLegacy(h string) bool {
	for _, prefix := range []string{legacyMD5, legacySHA256} {
		if rest, ok := strings.CutPrefix(h, prefix); ok {
			got, ok := LegacyHash(rest)
			return ok && got == h
		}
	}
	return false
}

// checkLegacy reports whether hash is a legacy hash (legacy) and whether
// pw matches it (ok), in constant time.
func checkLegacy(hash, pw string) (ok, legacy bool) {
	var want, got []byte
	switch {
	case strings.HasPrefix(hash, legacyMD5):
		sum := md5.Sum([]byte(pw))
		want, got = []byte(hash[len(legacyMD5):]), []byte(hex.EncodeToString(sum[:]))
	case strings.HasPrefix(hash, legacySHA256):
		sum := sha256.Sum256([]byte(pw))
		want, got = []byte(hash[len(legacySHA256):]), []byte(hex.EncodeToString(sum[:]))
	default:
		return false, false
	}
	return len(pw) <= MaxPasswordLen && subtle.ConstantTimeCompare(want, got) == 1, true
}

// checkWithLegacy is check, legacy hashes included: a legacy hash of a
// known user u that matches is replaced by an argon2id one (u is
// updated; a failed update keeps the sign-in, the next one tries again).
// A legacy check does the argon2id work of a dummy hash too, so it takes
// as long as any other sign-in.
func (s *Service) checkWithLegacy(ctx context.Context, u *xjob.User, hash, pw string, known bool) (bool, error) {
	ok, legacy := checkLegacy(hash, pw)
	if !legacy {
		return s.check(ctx, hash, pw)
	}
	if _, err := s.check(ctx, s.dummy(), pw); err != nil {
		return false, err
	}
	if !ok || !known {
		return ok, nil
	}
	// The re-hash takes a hash slot like every other argon2id run, so a
	// burst of legacy sign-ins stays inside the memory bound; with no slot
	// free the sign-in still succeeds and the next one re-hashes. The old
	// password is kept as it is (hashPassword, not HashPassword): it may be
	// shorter than xjob's rule for new passwords.
	if !s.slots.acquire(ctx, s.cfg.HashWait) {
		return true, nil
	}
	h := hashPassword(pw, s.cfg.Params)
	s.slots.release()
	n := *u
	n.PasswordHash, n.UpdatedAt = h, clock.Millis(s.cfg.Clock)
	if out, err := s.cfg.Users.UserUpdate(ctx, driver.UserUpdateParams{User: n, ExpectVersion: u.Version}); err == nil {
		*u = out
	}
	return true, nil
}

// ImportedUser is a user an import brings, with its legacy hash.
type ImportedUser struct {
	Username     string    `json:"username"`
	PasswordHash string    `json:"passwordHash"` // LegacyHash form
	Role         xjob.Role `json:"role"`
	GroupIDs     []int64   `json:"groupIds"`
}

// ImportUsers stores users an import brings, keeping their legacy
// password hashes (admins only). A username already taken is left as it
// is and listed in skipped; a user with a bad field or hash is refused
// and nothing is stored.
func (s *Service) ImportUsers(ctx context.Context, actor Principal, in []ImportedUser) (created, skipped []string, err error) {
	if err := requireAdmin(actor); err != nil {
		return nil, nil, err
	}
	now := clock.Millis(s.cfg.Clock)
	var problems []xjob.FieldProblem
	users := make([]xjob.User, len(in))
	for i, iu := range in {
		u := xjob.User{Username: iu.Username, Role: iu.Role, GroupIDs: normIDs(iu.GroupIDs), PasswordHash: iu.PasswordHash,
			CreatedAt: now, UpdatedAt: now}
		var ve *xjob.ValidationError
		if err := u.Validate(); errors.As(err, &ve) {
			for _, p := range ve.Problems {
				problems = append(problems, xjob.FieldProblem{Field: fmt.Sprintf("users[%d].%s", i, p.Field), Message: p.Message})
			}
		}
		if !validLegacy(u.PasswordHash) {
			problems = append(problems, xjob.FieldProblem{Field: fmt.Sprintf("users[%d].passwordHash", i),
				Message: "must be an xxl-job MD5 or SHA-256 hash (LegacyHash form)"})
		}
		users[i] = u
	}
	if len(problems) > 0 {
		return nil, nil, &xjob.ValidationError{Problems: problems}
	}
	for _, u := range users {
		_, err := s.cfg.Users.UserInsert(ctx, u)
		switch {
		case errors.Is(err, xjob.ErrConflict):
			skipped = append(skipped, u.Username)
		case err != nil:
			return created, skipped, fmt.Errorf("auth user import %q: %w", u.Username, err)
		default:
			created = append(created, u.Username)
		}
	}
	return created, skipped, nil
}
