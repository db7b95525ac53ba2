package schedule

import "sync"

// Cache remembers parsed schedules by their text, so that a caller who
// needs a job's schedule again and again (the scan, once per due job per
// tick) parses each distinct (type, conf, time zone) once: a cron
// expression's parse and, above all, a named zone's time.LoadLocation
// (which reads the zoneinfo database every time) are far dearer than the
// map look-up. Keying by the text rather than by job makes an edit that
// changes the schedule a different key, so nothing needs invalidating, and
// lets the many jobs that share an expression share one entry.
//
// A Cache holds at most its limit of entries; when full, it drops an
// arbitrary one to make room. It is safe for concurrent use, and the
// Schedules it returns are immutable (see Cron).
type Cache struct {
	limit int

	mu sync.RWMutex
	m  map[cacheKey]Schedule
}

type cacheKey struct{ typ, conf, tz string }

// DefaultCacheLimit bounds a Cache built with a limit ≤ 0.
const DefaultCacheLimit = 10_000

// NewCache returns an empty cache of at most limit schedules.
func NewCache(limit int) *Cache {
	if limit <= 0 {
		limit = DefaultCacheLimit
	}
	return &Cache{limit: limit, m: make(map[cacheKey]Schedule)}
}

// Parse is Parse(typ, conf, tz), from the cache when it was parsed before.
// Errors are not cached: a bad schedule is reported each time it is asked
// for (the scan stops such a job at once).
func (c *Cache) Parse(typ, conf, tz string) (Schedule, error) {
	k := cacheKey{typ, conf, tz}
	c.mu.RLock()
	s, ok := c.m[k]
	c.mu.RUnlock()
	if ok {
		return s, nil
	}
	s, err := Parse(typ, conf, tz)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[k]; !ok && len(c.m) >= c.limit {
		for old := range c.m {
			delete(c.m, old)
			break
		}
	}
	c.m[k] = s
	return s, nil
}

// Len is the number of schedules held.
func (c *Cache) Len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.m)
}
