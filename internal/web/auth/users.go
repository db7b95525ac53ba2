package auth

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/driver"
)

// BootstrapUser is the user created on first start.
const BootstrapUser = "admin"

// Bootstrap creates the admin user with a generated password when the
// store has no user at all, and returns that password (to print once);
// "" when users exist. Two processes starting at once create it once.
func (s *Service) Bootstrap(ctx context.Context) (string, error) {
	us, err := s.cfg.Users.UserList(ctx, driver.UserListParams{})
	if err != nil {
		return "", fmt.Errorf("auth bootstrap: %w", err)
	}
	if len(us) > 0 {
		return "", nil
	}
	pw := RandomPassword()
	hash, err := HashPassword(pw, s.cfg.Params)
	if err != nil {
		return "", fmt.Errorf("auth bootstrap: %w", err)
	}
	now := clock.Millis(s.cfg.Clock)
	_, err = s.cfg.Users.UserInsert(ctx, xjob.User{Username: BootstrapUser, PasswordHash: hash, Role: xjob.RoleAdmin,
		CreatedAt: now, UpdatedAt: now})
	if errors.Is(err, xjob.ErrConflict) {
		return "", nil // another process created it first
	}
	if err != nil {
		return "", fmt.Errorf("auth bootstrap: %w", err)
	}
	return pw, nil
}

// UserInput is what an admin submits for a user. A blank Password on an
// edit keeps the current one.
type UserInput struct {
	Username string    `json:"username"`
	Password string    `json:"password"`
	Role     xjob.Role `json:"role"`
	GroupIDs []int64   `json:"groupIds"`
	Locale   string    `json:"locale"`
	// Version, when not 0, is the version the editor read.
	Version int64 `json:"version"`
}

func invalid(field, msg string) error {
	return &xjob.ValidationError{Problems: []xjob.FieldProblem{{Field: field, Message: msg}}}
}

func requireAdmin(actor Principal) error {
	if !actor.Admin() {
		return fmt.Errorf("only an admin manages users: %w", ErrForbidden)
	}
	return nil
}

// ListUsersParams filters ListUsers. Zero values match everything.
type ListUsersParams struct {
	// Username matches a substring of the username.
	Username string
	// Role limits the list to admins or normal users (nil: both).
	Role *xjob.Role
}

// ListUsers returns users (admins only).
func (s *Service) ListUsers(ctx context.Context, actor Principal, p ListUsersParams) ([]xjob.User, error) {
	if err := requireAdmin(actor); err != nil {
		return nil, err
	}
	us, err := s.cfg.Users.UserList(ctx, driver.UserListParams{Username: p.Username, Role: p.Role})
	if err != nil {
		return nil, fmt.Errorf("auth user list: %w", err)
	}
	return us, nil
}

// GetUser returns one user: any user for an admin, oneself otherwise.
func (s *Service) GetUser(ctx context.Context, actor Principal, username string) (xjob.User, error) {
	if !actor.Admin() && actor.User.Username != username {
		return xjob.User{}, fmt.Errorf("user %q: %w", username, ErrForbidden)
	}
	u, err := s.cfg.Users.UserGet(ctx, username)
	if err != nil {
		return xjob.User{}, fmt.Errorf("auth user get: %w", err)
	}
	return u, nil
}

// CreateUser validates and stores a new user (admins only).
func (s *Service) CreateUser(ctx context.Context, actor Principal, in UserInput) (xjob.User, error) {
	if err := requireAdmin(actor); err != nil {
		return xjob.User{}, err
	}
	now := clock.Millis(s.cfg.Clock)
	u := xjob.User{Username: in.Username, Role: in.Role, GroupIDs: normIDs(in.GroupIDs), Locale: in.Locale,
		CreatedAt: now, UpdatedAt: now}
	var problems []xjob.FieldProblem
	var ve *xjob.ValidationError
	if err := u.Validate(); errors.As(err, &ve) {
		problems = append(problems, ve.Problems...)
	}
	if err := CheckPasswordRules(in.Password); err != nil {
		problems = append(problems, xjob.FieldProblem{Field: "password", Message: err.Error()})
	}
	if len(problems) > 0 {
		return xjob.User{}, &xjob.ValidationError{Problems: problems}
	}
	hash, err := s.hash(ctx, in.Password)
	if errors.Is(err, ErrBusy) {
		return xjob.User{}, err
	}
	if err != nil {
		return xjob.User{}, invalid("password", err.Error())
	}
	u.PasswordHash = hash
	out, err := s.cfg.Users.UserInsert(ctx, u)
	if errors.Is(err, xjob.ErrConflict) {
		return xjob.User{}, invalid("username", "is taken")
	}
	if err != nil {
		return xjob.User{}, fmt.Errorf("auth user create: %w", err)
	}
	return out, nil
}

// UpdateUser edits a user's role, groups, locale and (when given)
// password (admins only). An admin cannot take the admin role from
// themselves, so that the last admin cannot lock everyone out by mistake.
func (s *Service) UpdateUser(ctx context.Context, actor Principal, in UserInput) (xjob.User, error) {
	if err := requireAdmin(actor); err != nil {
		return xjob.User{}, err
	}
	if !actor.Token && actor.User.Username == in.Username && in.Role != xjob.RoleAdmin {
		return xjob.User{}, invalid("role", "you cannot take the admin role from yourself")
	}
	return s.edit(ctx, in.Username, in.Version, func(u *xjob.User) error {
		u.Role, u.GroupIDs, u.Locale = in.Role, normIDs(in.GroupIDs), in.Locale
		if in.Password != "" {
			return s.setPassword(ctx, u, in.Password)
		}
		return nil
	})
}

// DeleteUser removes a user (admins only; not oneself).
func (s *Service) DeleteUser(ctx context.Context, actor Principal, username string) error {
	if err := requireAdmin(actor); err != nil {
		return err
	}
	if !actor.Token && actor.User.Username == username {
		return invalid("username", "you cannot delete yourself")
	}
	if err := s.cfg.Users.UserDelete(ctx, username); err != nil {
		return fmt.Errorf("auth user delete: %w", err)
	}
	return nil
}

// ChangePassword changes the actor's own password after checking the
// current one. Every session of the user ends (their stamp no longer
// matches); the caller signs the current one in again. Checks of the
// current password are limited like sign-ins (MaxFailures per FailWindow
// and user, ErrTooManyAttempts past it), so a stolen session cannot guess
// it without bound.
func (s *Service) ChangePassword(ctx context.Context, actor Principal, current, next string) (xjob.User, error) {
	if actor.Token {
		return xjob.User{}, fmt.Errorf("the admin token has no password: %w", ErrForbidden)
	}
	key := "password|" + actor.User.Username
	if err := s.allow(ctx, key, "", ""); err != nil {
		return xjob.User{}, err
	}
	u, err := s.edit(ctx, actor.User.Username, 0, func(u *xjob.User) error {
		ok, err := s.check(ctx, u.PasswordHash, current)
		if err != nil {
			return err
		}
		if !ok {
			return invalid("current", "is wrong")
		}
		return s.setPassword(ctx, u, next)
	})
	if err == nil {
		err = s.store.AttemptReset(ctx, key)
	}
	return u, err
}

// SetLocale stores the actor's console language.
func (s *Service) SetLocale(ctx context.Context, actor Principal, locale string) error {
	if actor.Token {
		return nil
	}
	_, err := s.edit(ctx, actor.User.Username, 0, func(u *xjob.User) error {
		u.Locale = locale
		return nil
	})
	return err
}

func (s *Service) setPassword(ctx context.Context, u *xjob.User, pw string) error {
	if err := CheckPasswordRules(pw); err != nil {
		return invalid("password", err.Error())
	}
	hash, err := s.hash(ctx, pw)
	if errors.Is(err, ErrBusy) {
		return err
	}
	if err != nil {
		return invalid("password", err.Error())
	}
	u.PasswordHash = hash
	return nil
}

// edit is a versioned read-modify-write of one user.
func (s *Service) edit(ctx context.Context, username string, version int64, fn func(u *xjob.User) error) (xjob.User, error) {
	old, err := s.cfg.Users.UserGet(ctx, username)
	if err != nil {
		return xjob.User{}, fmt.Errorf("auth user %q: %w", username, err)
	}
	if version != 0 && version != old.Version {
		return xjob.User{}, fmt.Errorf("user %q was changed since version %d: %w", username, version, xjob.ErrConflict)
	}
	u := old
	if err := fn(&u); err != nil {
		return xjob.User{}, err
	}
	if err := u.Validate(); err != nil {
		return xjob.User{}, err
	}
	u.UpdatedAt = clock.Millis(s.cfg.Clock)
	out, err := s.cfg.Users.UserUpdate(ctx, driver.UserUpdateParams{User: u, ExpectVersion: old.Version})
	if err != nil {
		return xjob.User{}, fmt.Errorf("auth user update %q: %w", username, err)
	}
	return out, nil
}

func normIDs(ids []int64) []int64 {
	out := slices.Clone(ids)
	slices.Sort(out)
	return slices.Compact(out)
}
