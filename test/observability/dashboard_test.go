package observability_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"

	"github.com/challenge-operator/challenge-operator/test/controlplane"
)

// dashboardPanel is what the test reads of a Grafana panel.
type dashboardPanel struct {
	Title   string           `json:"title"`
	Type    string           `json:"type"`
	Panels  []dashboardPanel `json:"panels"` // a collapsed row's
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
}

// grafanaVariables are replaced as Grafana would before a query is sent.
var grafanaVariables = strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m", "$__range", "6h", "$template", ".*")

// TestDashboardQueriesParse hands every query of the dashboard, its
// variables replaced as Grafana does, to promtool as a recording rule:
// `promtool check rules` parses each with Prometheus' own PromQL parser.
// Every metric of ours it reads is one the operator or the instancer exports.
func TestDashboardQueriesParse(t *testing.T) {
	g := NewWithT(t)
	raw, err := os.ReadFile(filepath.Join(controlplane.RepoRoot(), "config", "grafana", "challenge-operator.json"))
	g.Expect(err).NotTo(HaveOccurred())
	var dashboard struct {
		UID    string           `json:"uid"`
		Title  string           `json:"title"`
		Panels []dashboardPanel `json:"panels"`
	}
	g.Expect(json.Unmarshal(raw, &dashboard)).To(Succeed())
	g.Expect(dashboard.UID).NotTo(BeEmpty())

	var rules []map[string]string
	ours := map[string]bool{}
	var walk func([]dashboardPanel)
	walk = func(panels []dashboardPanel) {
		for _, p := range panels {
			walk(p.Panels)
			if p.Type == "row" {
				continue
			}
			g.Expect(p.Targets).NotTo(BeEmpty(), "panel %q has a query", p.Title)
			for _, target := range p.Targets {
				g.Expect(target.Expr).NotTo(BeEmpty(), "panel %q, query %s", p.Title, target.RefID)
				rules = append(rules, map[string]string{
					"record": fmt.Sprintf("dashboard:query_%d", len(rules)),
					"expr":   grafanaVariables.Replace(target.Expr),
				})
				for _, name := range regexp.MustCompile(`\bchallenge_[a-z_]+`).FindAllString(target.Expr, -1) {
					ours[name] = true
				}
			}
		}
	}
	walk(dashboard.Panels)
	g.Expect(len(rules)).To(BeNumerically(">=", 20))

	assets, err := controlplane.AssetsDir()
	g.Expect(err).NotTo(HaveOccurred())
	out, err := yaml.Marshal(map[string]any{"groups": []any{map[string]any{"name": "dashboard", "rules": rules}}})
	g.Expect(err).NotTo(HaveOccurred())
	file := filepath.Join(t.TempDir(), "dashboard.yaml")
	g.Expect(os.WriteFile(file, out, 0o644)).To(Succeed())
	output, err := exec.Command(filepath.Join(assets, "promtool"), "check", "rules", file).CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), "promtool check rules:\n%s", output)

	exported := exportedMetrics(t)
	histogram := regexp.MustCompile(`_(bucket|count|sum)$`)
	for name := range ours {
		g.Expect(exported[name] || exported[histogram.ReplaceAllString(name, "")]).To(BeTrue(), "the dashboard reads %s, which nothing exports", name)
	}
}

// exportedMetrics are the metric names the operator's and the instancer's
// Go code declares (a Name: or NewDesc string starting with challenge_).
func exportedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	for _, dir := range []string{"metrics", "instancer"} {
		files, err := filepath.Glob(filepath.Join(controlplane.RepoRoot(), "internal", dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range regexp.MustCompile(`(?:Name:\s*|NewDesc\()"(challenge_[a-z_]+)"`).FindAllStringSubmatch(string(src), -1) {
				names[m[1]] = true
			}
		}
	}
	return names
}

// TestDashboardConfigMap: config/grafana builds a ConfigMap the Grafana
// sidecar loads, holding the dashboard as it is.
func TestDashboardConfigMap(t *testing.T) {
	g := NewWithT(t)
	raw, err := os.ReadFile(filepath.Join(controlplane.RepoRoot(), "config", "grafana", "challenge-operator.json"))
	g.Expect(err).NotTo(HaveOccurred())
	maps := build(t, "grafana", "ConfigMap")
	g.Expect(maps).To(HaveLen(1))
	g.Expect(maps[0].GetLabels()).To(HaveKeyWithValue("grafana_dashboard", "1"))
	g.Expect(maps[0].Object["data"]).To(HaveKeyWithValue("challenge-operator.json", string(raw)))
}
