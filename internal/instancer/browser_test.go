package instancer_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/testbrowser"
	"github.com/challenge-operator/challenge-operator/internal/testcluster"
)

// TestPageStartsShowsAndStopsAnInstance drives the page in headless
// Chromium as a participant would: open the team's link, Start, wait for
// Running and the connect string, Stop, and see the instance gone. It saves
// a screenshot of the running instance ($INSTANCER_SCREENSHOT, else in the
// test's temporary directory).
func TestPageStartsShowsAndStopsAnInstance(t *testing.T) {
	g := NewWithT(t)
	testcluster.Chromium(t) // before any setup: skipped early without a browser
	tmpl := startableTemplate(t, nil)
	team := uniqueName("team")
	tok := mint(t, team)

	ctx := testbrowser.New(t, 1000, 700, 3*timeout)

	card := `li.card[data-template="` + tmpl + `"]`
	var url string
	g.Expect(chromedp.Run(ctx,
		chromedp.Navigate(api.URL+"/#token="+tok),
		chromedp.WaitVisible(card+" button.start"),
		chromedp.Location(&url),
	)).To(Succeed())
	g.Expect(url).NotTo(ContainSubstring("token"), "the token leaves the address bar once read")

	g.Expect(chromedp.Run(ctx, chromedp.Click(card+" button.start"))).To(Succeed())
	var phase, connect string
	g.Eventually(func(g Gomega) {
		g.Expect(chromedp.Run(ctx,
			chromedp.Text(card+" .phase", &phase),
			chromedp.Text(card+" .endpoint", &connect),
		)).To(Succeed())
		g.Expect(phase).To(Equal("Running"))
		g.Expect(connect).To(HavePrefix("nc "))
	}, timeout, interval).Should(Succeed())
	var countdown string
	g.Expect(chromedp.Run(ctx, chromedp.Text(card+" .countdown", &countdown))).To(Succeed())
	g.Expect(countdown).To(MatchRegexp(`\d+m \d\ds`), "a countdown to expiresAt")

	var png []byte
	g.Expect(chromedp.Run(ctx, chromedp.CaptureScreenshot(&png))).To(Succeed())
	shot := os.Getenv("INSTANCER_SCREENSHOT")
	if shot == "" {
		shot = filepath.Join(t.TempDir(), "instancer.png")
	}
	g.Expect(os.WriteFile(shot, png, 0o644)).To(Succeed())
	t.Logf("screenshot: %s", shot)

	g.Expect(chromedp.Run(ctx, chromedp.Click(card+" button.stop"))).To(Succeed())
	h.EventuallyGone(t, &ctfv1alpha1.Challenge{ObjectMeta: metav1.ObjectMeta{Namespace: instancesNamespace, Name: nameOf(tmpl, team)}},
		timeout, "Stop deletes the Challenge")
	g.Eventually(func(g Gomega) {
		g.Expect(chromedp.Run(ctx, chromedp.Text(card+" .phase", &phase))).To(Succeed())
		g.Expect(strings.TrimSpace(phase)).To(Equal("Not started"))
	}, timeout, interval).Should(Succeed())
}
