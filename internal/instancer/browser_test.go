package instancer_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/token"
	"github.com/challenge-operator/challenge-operator/test/browser"
)

// TestPageStartsShowsAndStopsAnInstance drives the page in headless
// Chromium as a participant would: open the team's link, Start, wait for
// Running and the connect string, Stop, and see the instance gone. It saves
// a screenshot of the running instance ($INSTANCER_SCREENSHOT, else in the
// test's temporary directory).
func TestPageStartsShowsAndStopsAnInstance(t *testing.T) {
	g := NewWithT(t)
	browser.Chromium(t) // before any setup: skipped early without a browser
	tmpl := startableTemplate(t, nil)
	team := uniqueName("team")
	tok := mint(t, team)

	ctx := browser.New(t, 1000, 700, 3*timeout)

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

// TestPageSolvesTheProofOfWork: a template that asks for a proof of work
// starts and renews from the page as any other, which shows it checking
// the browser meanwhile (a start or renewal without a solution is refused).
func TestPageSolvesTheProofOfWork(t *testing.T) {
	g := NewWithT(t)
	browser.Chromium(t)
	tmpl := startableTemplate(t, func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.Instancer.ProofOfWork = &ctfv1alpha1.ProofOfWork{Difficulty: 50_000}
	})
	team := uniqueName("team")
	ctx := browser.New(t, 1000, 700, 3*timeout)
	card := `li.card[data-template="` + tmpl + `"]`
	g.Expect(chromedp.Run(ctx,
		chromedp.Navigate(api.URL+"/#token="+mint(t, team)),
		chromedp.WaitVisible(card+" button.start"),
		// Every text the card's check shows, however briefly.
		chromedp.Evaluate(`window.checks = [];
			new MutationObserver(() => window.checks.push(document.querySelector('`+card+` .check').textContent))
				.observe(document.querySelector('`+card+` .check'), {childList: true, characterData: true, subtree: true});`, nil),
		chromedp.Click(card+" button.start"),
	)).To(Succeed())
	var phase string
	g.Eventually(func(g Gomega) {
		g.Expect(chromedp.Run(ctx, chromedp.Text(card+" .phase", &phase))).To(Succeed())
		g.Expect(phase).To(Equal("Running"))
	}, timeout, interval).Should(Succeed())
	var checks []string
	g.Expect(chromedp.Run(ctx, chromedp.Evaluate(`window.checks`, &checks))).To(Succeed())
	g.Expect(checks).To(ContainElement(HavePrefix("Checking your browser…")))

	g.Expect(chromedp.Run(ctx, chromedp.Click(card+" button.renew"))).To(Succeed())
	g.Eventually(func(g Gomega) {
		ch := &ctfv1alpha1.Challenge{}
		g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: instancesNamespace, Name: nameOf(tmpl, team)}, ch)).To(Succeed())
		g.Expect(ch.Spec.RenewedAt).NotTo(BeNil(), "renewed from the page")
	}, timeout, interval).Should(Succeed())
	var notice bool
	g.Expect(chromedp.Run(ctx, chromedp.Evaluate(`document.getElementById("notice").hidden`, &notice))).To(Succeed())
	g.Expect(notice).To(BeTrue(), "no error shown")
}

// TestPageAsksBeforeSwitchingTeams: opening another team's link in a tab
// signed in as a team replaced the stored token without a word. The page
// now asks; declining keeps the team it had, accepting switches, and a
// link of the same team (a new token) switches without asking.
func TestPageAsksBeforeSwitchingTeams(t *testing.T) {
	g := NewWithT(t)
	browser.Chromium(t)
	tmpl := startableTemplate(t, nil)
	blue, red := uniqueName("blue"), uniqueName("red")
	tokBlue, tokRed := mint(t, blue), mint(t, red)
	ctx := browser.New(t, 1000, 700, 3*timeout)
	card := `li.card[data-template="` + tmpl + `"]`

	var team, stored, url string
	signedInAs := func(want, tok string) {
		t.Helper()
		g.Expect(chromedp.Run(ctx,
			chromedp.WaitVisible(card+" button.start"),
			chromedp.Text("#team", &team),
			chromedp.Evaluate(`sessionStorage.getItem("challenge-instancer-token")`, &stored),
			chromedp.Location(&url),
		)).To(Succeed())
		g.Expect(team).To(Equal("Team "+want), "the page is the team's")
		g.Expect(stored).To(Equal(tok), "and so is the stored token")
		g.Expect(url).NotTo(ContainSubstring("token"))
	}
	open := func(tok string) {
		t.Helper()
		g.Expect(chromedp.Run(ctx, chromedp.Navigate("about:blank"), chromedp.Navigate(api.URL+"/#token="+tok))).To(Succeed())
	}
	var question string
	asked := func() {
		t.Helper()
		g.Expect(chromedp.Run(ctx, chromedp.WaitVisible("#switch"), chromedp.Text("#switch-text", &question))).To(Succeed())
		g.Expect(question).To(And(ContainSubstring("team "+red), ContainSubstring("team "+blue)))
	}

	open(tokBlue)
	signedInAs(blue, tokBlue)

	open(tokRed)
	asked()
	var cards int
	g.Expect(chromedp.Run(ctx, chromedp.Evaluate(`document.querySelectorAll("li.card").length`, &cards))).To(Succeed())
	g.Expect(cards).To(BeZero(), "nothing is loaded for either team before the answer")
	g.Expect(chromedp.Run(ctx, chromedp.Click("#switch-no"))).To(Succeed())
	signedInAs(blue, tokBlue)

	// A link opened in the open page (only the fragment changes).
	g.Expect(chromedp.Run(ctx, chromedp.Evaluate(`location.hash = "token=`+tokRed+`"`, nil))).To(Succeed())
	asked()
	g.Expect(chromedp.Run(ctx, chromedp.Click("#switch-no"))).To(Succeed())
	g.Expect(chromedp.Run(ctx, chromedp.WaitNotVisible("#switch"))).To(Succeed())
	signedInAs(blue, tokBlue)

	open(tokRed)
	asked()
	g.Expect(chromedp.Run(ctx, chromedp.Click("#switch-yes"))).To(Succeed())
	signedInAs(red, tokRed)

	again, err := token.MintFor(keys, "", red, audience, 2*time.Hour, time.Now())
	g.Expect(err).NotTo(HaveOccurred())
	open(again)
	signedInAs(red, again)
	var hidden bool
	g.Expect(chromedp.Run(ctx, chromedp.Evaluate(`document.getElementById("switch").hidden`, &hidden))).To(Succeed())
	g.Expect(hidden).To(BeTrue(), "a new link of the same team is not asked about")
}
