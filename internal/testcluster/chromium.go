package testcluster

import (
	"os"
	"os/exec"
	"testing"
)

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
