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

// History is the trigger logs and report days `xjob import` carries over
// (POST /v1/import/history).
type History struct {
	Logs []xjob.Log       `json:"logs"`
	Days []xjob.ReportDay `json:"days"`
	// Origin names the database the days come from: each origin's days
	// are counted apart, and a second import adds only what changed.
	Origin string `json:"origin,omitempty"`
}

// HistoryResult says what ImportHistory stored and what it found stored.
type HistoryResult struct {
	LogsCreated int `json:"logsCreated"`
	LogsKept    int `json:"logsKept"`
	DaysAdded   int `json:"daysAdded"`
	DaysKept    int `json:"daysKept"`
}

// ImportHistory stores another scheduler's finished logs (occurrence ids
// starting "import/") and report days; a second call with the same ones
// changes nothing. Admins only.
func (c *Client) ImportHistory(ctx context.Context, h History) (HistoryResult, error) {
	var out HistoryResult
	err := c.do(ctx, http.MethodPost, "/v1/import/history", nil, h, &out)
	return out, err
}

// UserList returns every console user (GET /v1/users; admins only), their
// password hashes left out. A server without users answers 404.
func (c *Client) UserList(ctx context.Context) ([]xjob.User, error) {
	var out struct {
		Items []xjob.User `json:"items"`
	}
	err := c.do(ctx, http.MethodGet, "/v1/users", nil, nil, &out)
	return out.Items, err
}
