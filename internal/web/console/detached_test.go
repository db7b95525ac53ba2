package console_test

import (
	"context"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/web/auth"
	"github.com/xjobdev/xjob/pkg/driver"
)

// TestLogClearOutlivesRequest: a "clear logs" whose request is canceled
// half-way (the tab closed) still deletes every log it was asked to.
func TestLogClearOutlivesRequest(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()
	const n = 5_000
	for b := 0; b < n; b += 1000 {
		batch := make([]xjob.Log, 1000)
		for i := range batch {
			k := b + i
			batch[i] = xjob.Log{OccurrenceID: "bulk/" + strconv.Itoa(k), JobID: f.myJob.ID, GroupID: f.mine.ID,
				TriggerType: xjob.TriggerManual, TriggerTime: start.UnixMilli() - int64(k)}
		}
		if _, err := f.db.LogCreateMany(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	count := func() int {
		c, err := f.db.LogCount(ctx, driver.LogCountParams{GroupIDs: []int64{f.mine.ID}})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	before := count()
	s := f.signIn("boss", "boss-password")
	reqCtx, cancel := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() { // close the tab once the first batch is gone
		defer close(watched)
		for reqCtx.Err() == nil {
			c, err := f.db.LogCount(ctx, driver.LogCountParams{GroupIDs: []int64{f.mine.ID}})
			if err != nil || c != before {
				break
			}
			time.Sleep(2 * time.Millisecond)
		}
		cancel()
	}()
	form := url.Values{"group": {id(f.mine.ID)}, "mode": {"all"}, auth.CSRFField: {s.csrf}}
	req := httptest.NewRequestWithContext(reqCtx, "POST", "/console/logs/clear", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(s.cookie)
	rec := httptest.NewRecorder()
	f.h.ServeHTTP(rec, req)
	cancel()
	<-watched // the watcher reads the store: it must end before the store closes
	if rec.Code != 303 || count() != 0 {
		t.Fatalf("clear with the tab closed: %d, %d of %d logs left\n%s", rec.Code, count(), before, rec.Body)
	}
}
