package schedule

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

func TestCache(t *testing.T) {
	t.Parallel()
	c := NewCache(3)
	a1, err := c.Parse(TypeCron, "0 0 12 * * ?", "Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	a2, err := c.Parse(TypeCron, "0 0 12 * * ?", "Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	if a1 != a2 {
		t.Error("the same text parsed twice: want the cached schedule")
	}
	// Another zone is another schedule: noon in Berlin is not noon UTC.
	b, err := c.Parse(TypeCron, "0 0 12 * * ?", "")
	if err != nil {
		t.Fatal(err)
	}
	from := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	na, _ := a1.Next(from)
	nb, _ := b.Next(from)
	if na.Equal(nb) || !nb.Equal(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)) || !na.Equal(time.Date(2026, 1, 1, 11, 0, 0, 0, time.UTC)) {
		t.Errorf("Berlin noon %v, UTC noon %v: zones were mixed up", na, nb)
	}
	if _, err := c.Parse(TypeCron, "not a cron", ""); err == nil {
		t.Error("bad expression parsed")
	}
	if _, err := c.Parse(TypeCron, "* * * * * ?", "Mars/Olympus"); err == nil {
		t.Error("bad zone parsed")
	}
	if c.Len() != 2 {
		t.Errorf("Len = %d, want 2 (errors are not cached)", c.Len())
	}
	for i := range 10 {
		if _, err := c.Parse(TypeFixRate, fmt.Sprint(i+1), ""); err != nil {
			t.Fatal(err)
		}
	}
	if c.Len() != 3 {
		t.Errorf("Len = %d after 12 distinct schedules, want the limit 3", c.Len())
	}
	f, err := c.Parse(TypeFixRate, "7", "")
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := f.Next(from); !n.Equal(from.Add(7 * time.Second)) {
		t.Errorf("FIX_RATE 7 next = %v", n)
	}
}

func TestCacheConcurrent(t *testing.T) {
	t.Parallel()
	c := NewCache(8)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				s, err := c.Parse(TypeCron, fmt.Sprintf("%d * * * * ?", (g+i)%20), "UTC")
				if err != nil {
					t.Error(err)
					return
				}
				if s == nil {
					t.Error("nil schedule")
					return
				}
			}
		})
	}
	wg.Wait()
	if c.Len() > 8 {
		t.Errorf("Len = %d, want ≤ 8", c.Len())
	}
}

// BenchmarkCacheParse compares parsing a zoned cron expression with finding it
// in a Cache.
func BenchmarkCacheParse(b *testing.B) {
	b.Run("parse", func(b *testing.B) {
		for range b.N {
			if _, err := Parse(TypeCron, "0/5 * 9-17 ? * MON-FRI", "Europe/Berlin"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("cache", func(b *testing.B) {
		c := NewCache(0)
		for range b.N {
			if _, err := c.Parse(TypeCron, "0/5 * 9-17 ? * MON-FRI", "Europe/Berlin"); err != nil {
				b.Fatal(err)
			}
		}
	})
}
