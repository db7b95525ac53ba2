package auth

import (
	"sync"
	"time"
)

// limiter counts failed sign-ins per key (a client address, a username)
// in fixed windows; a key with Max failures in its window is refused until
// the window ends. It lives in memory: on AWS each Lambda environment
// counts on its own, which bounds guessing per environment, not globally.
type limiter struct {
	max    int
	window time.Duration

	mu   sync.Mutex
	keys map[string]*window
}

type window struct {
	start    time.Time
	failures int
}

// maxLimiterKeys bounds the limiter's memory: past it, expired windows
// are dropped, and if none is expired the older ones go.
const maxLimiterKeys = 10_000

func newLimiter(maxFailures int, w time.Duration) *limiter {
	return &limiter{max: maxFailures, window: w, keys: map[string]*window{}}
}

// blocked reports whether key has used up its failures at now.
func (l *limiter) blocked(key string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	w, ok := l.keys[key]
	if !ok || now.Sub(w.start) >= l.window {
		return false
	}
	return w.failures >= l.max
}

// fail counts one failure of key at now.
func (l *limiter) fail(key string, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	w, ok := l.keys[key]
	if !ok || now.Sub(w.start) >= l.window {
		if len(l.keys) >= maxLimiterKeys {
			l.prune(now)
		}
		w = &window{start: now}
		l.keys[key] = w
	}
	w.failures++
}

// reset forgets key (after a successful sign-in).
func (l *limiter) reset(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.keys, key)
}

func (l *limiter) prune(now time.Time) {
	var oldest []time.Time
	for k, w := range l.keys {
		if now.Sub(w.start) >= l.window {
			delete(l.keys, k)
		} else {
			oldest = append(oldest, w.start)
		}
	}
	if len(l.keys) < maxLimiterKeys {
		return
	}
	// Every window is live: drop those older than the mean age.
	var sum time.Duration
	for _, t := range oldest {
		sum += now.Sub(t)
	}
	mean := sum / time.Duration(len(oldest))
	for k, w := range l.keys {
		if now.Sub(w.start) >= mean {
			delete(l.keys, k)
		}
	}
}
