// Package auth is who may do what in xjob's admin API and console: the
// admin token (the superuser of the CLI and automation), console users
// with argon2id password hashes, stateless signed session cookies, CSRF
// tokens, sign-in rate limiting and user management.
//
// A session is a signed cookie, so that any process holding the key —
// every Lambda environment, every restart of xjob local — can verify it;
// the store (driver.AuthStore) only records the sessions signed out
// before their cookie expires, which every request checks:
//
//	xjob_session = base64url(username|stamp|id|expiresMs) "." base64url(HMAC(key, "session", payload))
//
// The stamp is an HMAC of the user's password hash: changing the password
// ends every other session. The user is re-read on every request, so a
// role or group edit applies at once and a deleted user is signed out.
// The cookie is HttpOnly, SameSite=Strict, and Secure behind TLS.
//
//	            SignIn ok                      password changed, signed out,
//	(anonymous) ─────────▶ (signed in) ──────▶ user deleted, expired,
//	     ▲                    │  │             key rotated: (refused)
//	     │       SignOut      │  │ unsafe method
//	     └────────────────────┘  ▼
//	                       needs CSRF token = HMAC(key, "csrf", id)
//	                       (header X-CSRF-Token or form field _csrf)
//	                       and no cross-site Origin / Sec-Fetch-Site
//
// Sign-in attempts are counted in the store before any password is
// hashed, per username and address and (for addresses that already
// failed) per username; hashing runs in a bounded number of slots. See
// limiter.go.
package auth
