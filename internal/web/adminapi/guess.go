package adminapi

import (
	"sync"
	"time"

	"github.com/xjobdev/xjob/pkg/clock"
)

// Wrong bearer tokens per client. A generated admin token (48 hex
// digits) cannot be guessed, but every miss was compared and written to
// the audit log, so a client could write thousands of audit lines a
// second. Past bearerMaxFailures misses in bearerWindow a client's bearer
// requests are answered 429 without a comparison or an audit line (one
// line says the client was cut off) until the window ends. Counted in
// this process's memory: it bounds a flood's cost here, it is not a
// sign-in limit (a session cookie is signed, and not counted).
const (
	bearerMaxFailures = 20
	bearerWindow      = time.Minute
	// bearerMaxClients bounds the table; past it, ended windows are
	// dropped, then (under a flood of live ones) everything.
	bearerMaxClients = 10_000
)

// bearerGuard counts wrong bearer tokens per client.
type bearerGuard struct {
	clock clock.Clock
	mu    sync.Mutex
	m     map[string]*bearerCount
}

type bearerCount struct {
	end time.Time
	n   int
}

func newBearerGuard(clk clock.Clock) *bearerGuard {
	return &bearerGuard{clock: clk, m: map[string]*bearerCount{}}
}

// blocked reports whether client is past the limit, and until when.
func (g *bearerGuard) blocked(client string) (bool, time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	c, ok := g.m[client]
	if !ok || !g.clock.Now().Before(c.end) {
		return false, time.Time{}
	}
	return c.n > bearerMaxFailures, c.end
}

// fail counts one wrong token from client; audit is false once the
// client is past the limit (its further misses are not written down),
// and last is true for the miss that reached it.
func (g *bearerGuard) fail(client string) (audit, last bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.clock.Now()
	c, ok := g.m[client]
	if !ok || !now.Before(c.end) {
		if len(g.m) >= bearerMaxClients {
			for k, c := range g.m {
				if !now.Before(c.end) {
					delete(g.m, k)
				}
			}
			if len(g.m) >= bearerMaxClients {
				clear(g.m)
			}
		}
		c = &bearerCount{end: now.Add(bearerWindow)}
		g.m[client] = c
	}
	c.n++
	return c.n <= bearerMaxFailures+1, c.n == bearerMaxFailures+1
}
