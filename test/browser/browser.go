// Package browser starts headless Chromium for the tests that drive or
// render a page (the instancer's page, the dashboard's picture).
package browser

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// New starts a browser with a window of width x height and returns a
// chromedp context that ends after timeout, or with the test. Without
// Chromium the test fails on CI and is skipped elsewhere (Chromium).
func New(t *testing.T, width, height int, timeout time.Duration) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(Chromium(t)), chromedp.NoSandbox,
		chromedp.WindowSize(width, height), chromedp.Flag("disable-dev-shm-usage", true))
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	ctx, cancelTimeout := context.WithTimeout(ctx, timeout)
	t.Cleanup(func() {
		cancelTimeout()
		cancel()
		cancelAlloc()
	})
	return ctx
}

// Chromium finds Debian's headless browser for the tests that drive or
// render a page; the project's CI setup (hack/chromium.sh, run by make
// test) installs it. Without one, the test fails on CI and is skipped
// elsewhere.
func Chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no chromium: hack/chromium.sh installs it")
	}
	t.Skip("no chromium installed (hack/chromium.sh installs it)")
	return ""
}
