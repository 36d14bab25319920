package observability_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"image/png"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	. "github.com/onsi/gomega"

	"github.com/challenge-operator/challenge-operator/test/browser"
	"github.com/challenge-operator/challenge-operator/test/controlplane"
)

// The page's geometry: Grafana's 24-column grid, its row unit in pixels.
const (
	pageWidth = 1600
	rowUnit   = 30
)

// shape is a demo series over the six hours shown, t in hours, the CTF
// opening at 1 h.
type shape struct {
	name string
	f    func(t float64) float64
}

// opening rises at the CTF's opening (1 h) and decays over about tau hours.
func opening(base, peak, tau float64) func(float64) float64 {
	return func(t float64) float64 {
		if t < 1 {
			return base
		}
		return base + peak*math.Exp(-(t-1)/tau)
	}
}

// growth rises from 0 at the opening towards top.
func growth(top, tau float64) func(float64) float64 {
	return func(t float64) float64 {
		if t < 1 {
			return 0
		}
		return top * (1 - math.Exp(-(t-1)/tau))
	}
}

func scaled(f func(float64) float64, k float64) func(float64) float64 {
	return func(t float64) float64 { return k * f(t) }
}

func plus(c float64, f func(float64) float64) func(float64) float64 {
	return func(t float64) float64 { return c + f(t) }
}

// demo is the demo data of each panel, by title: a weekend's opening,
// 500 teams, four templates, a warm pool.
var demo = map[string][]shape{
	"Running":     {{"", func(float64) float64 { return 412 }}},
	"Starting":    {{"", func(float64) float64 { return 7 }}},
	"Queued":      {{"", func(float64) float64 { return 0 }}},
	"Error":       {{"", func(float64) float64 { return 2 }}},
	"Pools ready": {{"", func(float64) float64 { return 38 }}},
	"Operator up": {{"", func(float64) float64 { return 1 }}},
	"Instances by phase": {{"Running", growth(420, 0.4)}, {"Pending", opening(2, 60, 0.15)},
		{"Queued", opening(0, 40, 0.1)}, {"Error", opening(1, 4, 1)}},
	"Running instances by template": {{"web-intro", growth(180, 0.3)}, {"pwn-heap", growth(110, 0.6)},
		{"crypto-rsa", growth(80, 0.5)}, {"rev-vm", growth(50, 0.8)}},
	"Starts per minute": {{"instances Running for the first time", opening(0.5, 70, 0.2)}},
	"Time to Running":   {{"p50", opening(1.2, 2, 0.2)}, {"p95", opening(3.5, 9, 0.2)}},
	"Errors by reason":  {{"ImagePullBackOff", opening(0, 3, 0.3)}, {"QuotaExceeded", opening(0, 6, 0.1)}},
	"Expiries and renewals": {{"expired", func(t float64) float64 { // two hours' lifetime after the opening
		if t < 3 {
			return 0
		}
		return 30 * math.Max(0, math.Sin((t-3)*1.2))
	}},
		{"renewal: Renewed", growth(20, 1)}, {"renewal: RenewalLimitReached", growth(3, 2)}},
	"Longest waits": {{"never Running, in Pending", opening(4, 40, 0.2)}, {"past expiry, still there", func(float64) float64 { return 2 }}},
	"Queue":         {{"queued", opening(0, 40, 0.1)}, {"p95 wait (s)", opening(0, 90, 0.3)}},
	"Pool instances": {{"web-intro ready", func(t float64) float64 { return 20 - opening(0, 20, 0.3)(t) }},
		{"web-intro target", func(t float64) float64 { return 20 + opening(0, 30, 0.8)(t) }}},
	"Claims per minute": {{"web-intro claimed", opening(0.2, 45, 0.15)}, {"web-intro missed", opening(0, 8, 0.1)}},
	"CPU":               {{"challenge-operator-controller-manager", opening(0.02, 0.55, 0.2)}},
	"Memory": {{"RSS", plus(90<<20, scaled(growth(1, 0.5), 170<<20))},
		{"heap", plus(40<<20, scaled(growth(1, 0.5), 80<<20))}},
	"Reconcile latency p95": {{"challenge", opening(0.3, 2.5, 0.2)}, {"challenge-status", opening(0.02, 0.2, 0.2)}},
	"Reconcile errors and queue depth": {{"challenge errors/s", opening(0, 0.4, 0.1)},
		{"challenge queued", opening(0, 120, 0.1)}},
	"Instancer answers":     {{"200", opening(1, 25, 0.3)}, {"429", opening(0, 3, 0.2)}, {"500", func(float64) float64 { return 0 }}},
	"Instancer latency p95": {{"start", opening(0.05, 0.3, 0.2)}, {"renew", func(float64) float64 { return 0.03 }}},
}

var palette = []string{"#73bf69", "#f2cc0c", "#5794f2", "#ff780a", "#b877d9", "#f2495c"}

// TestDashboardRenders draws the dashboard's panels where its grid puts
// them, with demo data, as a static page in headless Chromium, and checks
// every panel is on it. The screenshot goes to $DASHBOARD_SCREENSHOT
// (docs/dashboard.png in docs/operations.md), else to the test's directory.
func TestDashboardRenders(t *testing.T) {
	g := NewWithT(t)
	browser.Chromium(t) // before any setup: skipped early without a browser
	raw, err := os.ReadFile(filepath.Join(controlplane.RepoRoot(), "config", "grafana", "challenge-operator.json"))
	g.Expect(err).NotTo(HaveOccurred())
	var dashboard struct {
		Title  string `json:"title"`
		Panels []struct {
			Title   string                   `json:"title"`
			Type    string                   `json:"type"`
			GridPos struct{ X, Y, W, H int } `json:"gridPos"`
		} `json:"panels"`
	}
	g.Expect(json.Unmarshal(raw, &dashboard)).To(Succeed())

	var page strings.Builder
	bottom, drawn := 0, 0
	for _, p := range dashboard.Panels {
		x, y := p.GridPos.X*pageWidth/24, p.GridPos.Y*rowUnit+40
		w, h := p.GridPos.W*pageWidth/24, p.GridPos.H*rowUnit
		bottom = max(bottom, y+h)
		if p.Type == "row" {
			fmt.Fprintf(&page, `<div class="row" style="left:%dpx;top:%dpx;width:%dpx">%s</div>`, x+8, y, w-16, html.EscapeString(p.Title))
			continue
		}
		series, ok := demo[p.Title]
		g.Expect(ok).To(BeTrue(), "demo data for panel %q", p.Title)
		fmt.Fprintf(&page, `<div class="panel" style="left:%dpx;top:%dpx;width:%dpx;height:%dpx"><div class="title">%s</div>`,
			x+4, y+4, w-8, h-8, html.EscapeString(p.Title))
		if p.Type == "stat" {
			fmt.Fprintf(&page, `<div class="stat">%s</div>`, humanize(series[0].f(6)))
		} else {
			page.WriteString(chart(series, w-8, h-8))
		}
		page.WriteString(`</div>`)
		drawn++
	}
	doc := fmt.Sprintf(`<!doctype html><html><head><meta charset="utf-8"><style>
body{margin:0;background:#111217;font-family:"DejaVu Sans",sans-serif;color:#ccccdc}
h1{font-size:17px;font-weight:500;margin:0;padding:10px 12px}
.row{position:absolute;font-size:14px;font-weight:500;color:#d8d9da;padding-top:8px}
.panel{position:absolute;background:#181b1f;border:1px solid #2c3235;border-radius:3px;overflow:hidden}
.title{font-size:12px;font-weight:500;padding:6px 8px;color:#ccccdc}
.stat{font-size:42px;color:#73bf69;text-align:center;padding-top:18px}
.legend{font-size:10px;padding:0 8px;white-space:nowrap;overflow:hidden}
.legend span{margin-right:10px}
</style></head><body style="height:%dpx"><h1>%s · demo data</h1>%s</body></html>`, bottom+10, html.EscapeString(dashboard.Title), page.String())

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(doc))
	}))
	defer srv.Close()
	ctx := browser.New(t, pageWidth, bottom+10, time.Minute)

	var panels int
	var shot []byte
	g.Expect(chromedp.Run(ctx,
		chromedp.Navigate(srv.URL),
		chromedp.WaitReady("body"),
		chromedp.Evaluate(`document.querySelectorAll(".panel").length`, &panels),
		chromedp.FullScreenshot(&shot, 100), // 100: PNG
	)).To(Succeed())
	g.Expect(panels).To(Equal(drawn), "every panel is on the page")
	img, err := png.Decode(bytes.NewReader(shot))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(img.Bounds().Dy()).To(BeNumerically(">=", bottom), "the whole dashboard is in the picture")

	out := os.Getenv("DASHBOARD_SCREENSHOT")
	if out == "" {
		out = filepath.Join(t.TempDir(), "dashboard.png")
	}
	g.Expect(os.WriteFile(out, shot, 0o644)).To(Succeed())
	t.Logf("screenshot: %s", out)
}

// chart draws series as an SVG time series (six hours, 5-minute steps)
// with a legend, in a panel of w by h pixels.
func chart(series []shape, w, h int) string {
	const points = 73
	top := 0.0
	for _, s := range series {
		for i := range points {
			top = max(top, s.f(float64(i)/12))
		}
	}
	if top == 0 {
		top = 1
	}
	plotW, plotH := float64(w-56), float64(h-62)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg width="%d" height="%d" style="display:block">`, w, h-44)
	for i := range 3 { // gridlines and their values
		y := 4 + plotH*float64(i)/2
		fmt.Fprintf(&b, `<line x1="44" x2="%d" y1="%.1f" y2="%.1f" stroke="#2c3235"/>`, w-8, y, y)
		fmt.Fprintf(&b, `<text x="40" y="%.1f" fill="#8e8e8e" font-size="9" text-anchor="end">%s</text>`, y+3, humanize(top*float64(2-i)/2))
	}
	for k, s := range series {
		var pts []string
		for i := range points {
			x := 44 + plotW*float64(i)/(points-1)
			y := 4 + plotH*(1-s.f(float64(i)/12)/top)
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x, y))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/>`, palette[k%len(palette)], strings.Join(pts, " "))
	}
	b.WriteString(`</svg><div class="legend">`)
	for k, s := range series {
		fmt.Fprintf(&b, `<span><span style="color:%s">━</span> %s</span>`, palette[k%len(palette)], html.EscapeString(s.name))
	}
	b.WriteString(`</div>`)
	return b.String()
}

// humanize writes v as Grafana's short unit would: 1.2K, 260M.
func humanize(v float64) string {
	switch {
	case v >= 1<<20:
		return fmt.Sprintf("%.0fM", v/(1<<20))
	case v >= 1000:
		return fmt.Sprintf("%.1fK", v/1000)
	case v >= 10 || v == math.Trunc(v):
		return fmt.Sprintf("%.0f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}
