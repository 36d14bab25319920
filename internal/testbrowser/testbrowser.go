// Package testbrowser starts headless Chromium for the tests that drive or
// render a page (the instancer's page, the dashboard's picture).
package testbrowser

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/challenge-operator/challenge-operator/internal/testcluster"
)

// New starts a browser with a window of width x height and returns a
// chromedp context that ends after timeout, or with the test. Without
// Chromium the test fails on CI and is skipped elsewhere (testcluster.Chromium).
func New(t *testing.T, width, height int, timeout time.Duration) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(testcluster.Chromium(t)), chromedp.NoSandbox,
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
