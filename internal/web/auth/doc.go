// Package auth is who may do what in xjob's admin API and console: the
// admin token (the superuser of the CLI and automation), console users
// with argon2id password hashes, stateless signed session cookies, CSRF
// tokens, sign-in rate limiting and user management.
//
// It is a service that owns its stores, as the scheduler's services do:
// users (driver.UserStore) and the sign-in attempts and signed-out
// sessions (driver.AuthStore) are its alone — no other service reads a
// password hash or a session — so it reaches them directly rather than
// through the control plane (internal/admin), whose rules are about jobs,
// groups and logs. Its own parameter types (ListUsersParams, UserInput)
// keep the port's types out of the HTTP handlers that call it. It sits in
// the web layer because what it decides is made of HTTP: cookies, the
// request's address, CSRF headers.
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
// hashed, per username and client (locked for that client past the
// limit) and, for clients that already failed, per username (slowed past
// the limit, never locked; a browser that signed in before skips it);
// hashing runs in a bounded number of slots. See limiter.go.
package auth
