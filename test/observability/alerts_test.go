package observability_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"

	"github.com/challenge-operator/challenge-operator/test/controlplane"
)

// runbooks is where every alert's runbook_url points, before its anchor.
const runbooks = "https://github.com/challenge-operator/challenge-operator/blob/main/docs/runbooks.md#"

// rule is an alerting rule of the PrometheusRule.
type rule struct {
	Alert       string            `json:"alert"`
	Expr        string            `json:"expr"`
	For         string            `json:"for"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

// shippedRules reads config/prometheus/rules.yaml: the PrometheusRule's
// groups as they are, and its alerting rules.
func shippedRules(t *testing.T) (groups any, rules []rule) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(controlplane.RepoRoot(), "config", "prometheus", "rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var generic struct {
		Spec struct {
			Groups any `json:"groups"`
		} `json:"spec"`
	}
	var typed struct {
		Kind string `json:"kind"`
		Spec struct {
			Groups []struct {
				Rules []rule `json:"rules"`
			} `json:"groups"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(raw, &generic); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(raw, &typed); err != nil || typed.Kind != "PrometheusRule" {
		t.Fatalf("rules.yaml is not a PrometheusRule: %v", err)
	}
	for _, g := range typed.Spec.Groups {
		rules = append(rules, g.Rules...)
	}
	return generic.Spec.Groups, rules
}

// TestAlertRules runs promtool (built from the Prometheus module by
// hack/test-bins.sh) on the shipped alerts: `check rules`, then the unit
// tests of testdata/alerts_test.yaml.
func TestAlertRules(t *testing.T) {
	g := NewWithT(t)
	assets, err := controlplane.AssetsDir()
	g.Expect(err).NotTo(HaveOccurred())
	promtool := filepath.Join(assets, "promtool")

	groups, _ := shippedRules(t)
	dir := t.TempDir()
	out, err := yaml.Marshal(map[string]any{"groups": groups})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.WriteFile(filepath.Join(dir, "rules.yaml"), out, 0o644)).To(Succeed())
	tests, err := os.ReadFile(filepath.Join("testdata", "alerts_test.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.WriteFile(filepath.Join(dir, "alerts_test.yaml"), tests, 0o644)).To(Succeed())

	for _, args := range [][]string{{"check", "rules", "rules.yaml"}, {"test", "rules", "alerts_test.yaml"}} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = dir
		output, err := cmd.CombinedOutput()
		g.Expect(err).NotTo(HaveOccurred(), "promtool %s:\n%s", strings.Join(args, " "), output)
	}
}

// TestEveryAlertIsComplete: every alert waits (for), has a severity, a
// summary, a description and a runbook that exists, and is tested both
// firing and quiet.
func TestEveryAlertIsComplete(t *testing.T) {
	g := NewWithT(t)
	_, rules := shippedRules(t)
	g.Expect(rules).NotTo(BeEmpty())
	book, err := os.ReadFile(filepath.Join(controlplane.RepoRoot(), "docs", "runbooks.md"))
	g.Expect(err).NotTo(HaveOccurred())
	headings := map[string]bool{}
	for _, line := range strings.Split(string(book), "\n") {
		if name, ok := strings.CutPrefix(line, "## "); ok {
			headings[name] = true
		}
	}
	fired, quiet := testedAlerts(t)

	for _, r := range rules {
		g.Expect(r.Alert).NotTo(BeEmpty(), "only alerting rules: %s", r.Expr)
		g.Expect(r.For).NotTo(BeEmpty(), "%s waits before it fires", r.Alert)
		g.Expect(r.Labels["severity"]).To(BeElementOf("critical", "warning", "info"), r.Alert)
		g.Expect(r.Annotations).To(HaveKey("summary"), r.Alert)
		g.Expect(r.Annotations).To(HaveKey("description"), r.Alert)
		g.Expect(r.Annotations["runbook_url"]).To(Equal(runbooks+strings.ToLower(r.Alert)), r.Alert)
		g.Expect(headings).To(HaveKey(r.Alert), "docs/runbooks.md has a section for %s", r.Alert)
		g.Expect(fired).To(ContainElement(r.Alert), "a test fires %s", r.Alert)
		g.Expect(quiet).To(ContainElement(r.Alert), "a test keeps %s quiet", r.Alert)
	}
	for name := range headings {
		g.Expect(slices.ContainsFunc(rules, func(r rule) bool { return r.Alert == name })).To(BeTrue(), "runbook %s has an alert", name)
	}
}

// testedAlerts returns the alerts testdata/alerts_test.yaml expects to fire
// somewhere, and those it expects quiet somewhere.
func testedAlerts(t *testing.T) (fired, quiet []string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "alerts_test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Tests []struct {
			AlertRuleTest []struct {
				Alertname string `json:"alertname"`
				ExpAlerts []any  `json:"exp_alerts"`
			} `json:"alert_rule_test"`
		} `json:"tests"`
	}
	if err := yaml.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	for _, test := range file.Tests {
		for _, a := range test.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fired = append(fired, a.Alertname)
			} else {
				quiet = append(quiet, a.Alertname)
			}
		}
	}
	return fired, quiet
}
