// Package browser drives the console in headless Chromium for tests: the
// same console is tested behind `xjob local` and behind the emulated AWS
// deployment, with these helpers shared between the two.
package browser

import (
	"context"
	"fmt"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/xjobdev/xjob/internal/testenv/tool"
)

// Start starts headless Chromium for one test and returns the context its
// actions run in (ended, and Chromium stopped, when the test ends; at
// most limit). Without chromium the test fails saying how to install it;
// under go test -short it is skipped.
func Start(t *testing.T, limit time.Duration) context.Context {
	t.Helper()
	tool.SkipIfShort(t, "Chromium")
	path, err := exec.LookPath("chromium")
	if err != nil {
		tool.Missing(t, fmt.Errorf("chromium not found on PATH: make test or make chromium installs Debian's chromium: %w", err))
	}
	// No UserDataDir: chromedp then makes a fresh profile directory and
	// removes it itself once Chromium has exited. One of our own, removed
	// in a cleanup, was left behind with files Chromium's helper
	// processes still wrote after the browser's exit.
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Flag("headless", true), chromedp.Flag("no-sandbox", true), chromedp.Flag("disable-gpu", true),
		chromedp.Flag("no-first-run", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.WindowSize(1400, 900),
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelB := chromedp.NewContext(actx)
	ctx, cancelC := context.WithTimeout(ctx, limit)
	t.Cleanup(func() { cancelC(); cancelB(); cancelA() })
	return ctx
}

// Run runs actions in the browser, failing t with what on error.
func Run(t testing.TB, ctx context.Context, what string, actions ...chromedp.Action) {
	t.Helper()
	if err := chromedp.Run(ctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// Visible waits until the element matching the CSS selector sel shows.
func Visible(sel string) chromedp.Action { return chromedp.WaitVisible(sel, chromedp.ByQuery) }

// ReloadUntil loads url until the JavaScript expression js is true on it,
// reloading every half second as a person would, and fails t after 20 s.
func ReloadUntil(t testing.TB, ctx context.Context, what, url, js string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; {
		var ok bool
		Run(t, ctx, what, chromedp.Navigate(url), Visible("main"), chromedp.Evaluate(js, &ok))
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s never held on %s", what, js, url)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
