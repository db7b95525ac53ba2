package xjob

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Role is what a console user may do (xxl_job_user.role: 0 normal, 1 admin).
type Role int

// Roles.
const (
	// RoleNormal sees and runs the jobs and logs of its groups only.
	RoleNormal Role = 0
	// RoleAdmin may do everything, executor groups and users included.
	RoleAdmin Role = 1
)

// User is a person who signs in to the console or the admin API with a
// session (xxl_job_user). The username is the key: it never changes.
type User struct {
	Username string `json:"username"`
	// PasswordHash is an argon2id hash in PHC form (see package auth);
	// never sent to clients.
	PasswordHash string `json:"-"`
	Role         Role   `json:"role"`
	// GroupIDs are the executor groups a normal user may see and run
	// (xxl_job_user.permission); ignored for admins.
	GroupIDs []int64 `json:"groupIds"`
	// Locale is the console language the user chose ("en", "zh-CN", "zh-TC"; ""
	// means the browser's or English).
	Locale    string `json:"locale"`
	Version   int64  `json:"version"`
	CreatedAt int64  `json:"addTime"`
	UpdatedAt int64  `json:"updateTime"`
}

// User field limits. xxl-job's console asks for usernames of 4–20
// characters of [a-z][a-z0-9]*, but its server checks only the length, so
// installations have names such as ops_eu or Zhao.Liu: xjob takes what an
// import must carry over (see ValidUsername).
const (
	MinUsernameLen = 4
	MaxUsernameLen = 20
	MaxUserGroups  = 1000
)

// Validate checks a user as an admin submits it (the password is checked
// by package auth, which hashes it).
func (u *User) Validate() error {
	var p problems
	if !ValidUsername(u.Username) {
		p.add("username", "must be %d to %d characters: letters, digits, '.', '_', '-' or '@'", MinUsernameLen, MaxUsernameLen)
	}
	if u.Role != RoleNormal && u.Role != RoleAdmin {
		p.add("role", "must be 0 (normal) or 1 (admin)")
	}
	if len(u.GroupIDs) > MaxUserGroups {
		p.add("groupIds", "at most %d groups", MaxUserGroups)
	}
	for _, id := range u.GroupIDs {
		if id <= 0 {
			p.add("groupIds", "%d is not a group id", id)
		}
	}
	switch u.Locale {
	case "", "en", "zh-CN", "zh-TC":
	default:
		p.add("locale", "must be en, zh-CN or zh-TC")
	}
	return p.err()
}

// ValidUsername reports whether name is 4–20 characters, each a letter,
// a digit or one of . _ - @ (any script: an xxl-job installation may have
// Chinese names). Spaces, separators and control characters are refused:
// a username is a URL path segment, a session field and a log word.
func ValidUsername(name string) bool {
	if n := utf8.RuneCountInString(name); n < MinUsernameLen || n > MaxUsernameLen || !utf8.ValidString(name) {
		return false
	}
	for _, c := range name {
		if !unicode.IsLetter(c) && !unicode.IsDigit(c) && !strings.ContainsRune("._-@", c) {
			return false
		}
	}
	return true
}

// CanGroup reports whether the user may see and run the jobs of group id.
func (u *User) CanGroup(id int64) bool {
	return u.Role == RoleAdmin || slices.Contains(u.GroupIDs, id)
}

// GlueVersion is one saved GLUE source of a job (xxl_job_logglue): the
// console keeps the newest MaxGlueVersions per job, restorable.
type GlueVersion struct {
	JobID     int64    `json:"jobId"`
	GlueType  GlueType `json:"glueType"`
	Source    string   `json:"glueSource"`
	Remark    string   `json:"glueRemark"`
	CreatedAt int64    `json:"addTime"`
}

// MaxGlueVersions is how many saved GLUE sources a job keeps (xxl-job: 30).
const MaxGlueVersions = 30
