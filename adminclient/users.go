package adminclient

import (
	"context"
	"net/http"

	"github.com/xjobdev/xjob"
)

// ImportedUser is a user `xjob import` brings from xxl-job, with its
// password hash as xxl-job stored it (see ImportUsers).
type ImportedUser struct {
	Username string `json:"username"`
	// PasswordHash is "$xxl-md5$<hex>" or "$xxl-sha256$<hex>".
	PasswordHash string    `json:"passwordHash"`
	Role         xjob.Role `json:"role"`
	GroupIDs     []int64   `json:"groupIds"`
}

// ImportUsersResult lists the users created and those skipped because
// their username was taken.
type ImportUsersResult struct {
	Created []string `json:"created"`
	Skipped []string `json:"skipped"`
}

// ImportUsers stores users with their xxl-job password hashes (POST
// /v1/import/users): they sign in with their old passwords, re-hashed
// with argon2id at the first sign-in. Admins only.
func (c *Client) ImportUsers(ctx context.Context, users []ImportedUser) (ImportUsersResult, error) {
	var out ImportUsersResult
	err := c.do(ctx, http.MethodPost, "/v1/import/users", nil, struct {
		Users []ImportedUser `json:"users"`
	}{users}, &out)
	return out, err
}
