package action

import (
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/release"
)

// TestValuesAreCheckedAsHelmChecksThem: the operator's check of a
// release's values against the chart's schema, compiled once, passes and
// fails exactly where Helm's own would, with Helm's text (its lines in no
// fixed order: the validator's).
func TestValuesAreCheckedAsHelmChecksThem(t *testing.T) {
	g := NewWithT(t)
	chrt, err := loader.Load(filepath.Join("..", "..", "charts", "challenge"))
	g.Expect(err).NotTo(HaveOccurred())
	for name, vals := range map[string]map[string]any{
		"valid":                 {"image": "nginx:1.27"},
		"no image":              {"image": nil},
		"image off its pattern": {"image": "nginx 1.27"},
		"wrong type":            {"image": "nginx:1.27", "participant": 7},
		"unknown key":           {"image": "nginx:1.27", "hostNetwork": true},
		"two faults":            {"image": "-", "participant": "Team A"},
	} {
		_, helmErr := chartutil.ToRenderValuesWithSchemaValidation(chrt, vals, chartutil.ReleaseOptions{}, nil, false)
		g.Expect(helmErr == nil).To(Equal(name == "valid"), "%s: %v", name, helmErr)
		checked, err := checkValues(chrt, vals)
		g.Expect(checked).To(BeTrue(), name)
		if helmErr == nil {
			g.Expect(err).NotTo(HaveOccurred(), name)
			continue
		}
		g.Expect(err).To(HaveOccurred(), name)
		// The validator reports several problems in no fixed order, Helm's too.
		g.Expect(lines(err.Error())).To(ConsistOf(lines(helmErr.Error())), name)
	}
}

func lines(s string) []string { return strings.Split(s, "\n") }

// TestValuesHelmMustCheckItself: a chart with subcharts, or whose schema
// refers to another document, is left to Helm, which loads what it needs.
func TestValuesHelmMustCheckItself(t *testing.T) {
	g := NewWithT(t)
	remote := &chart.Chart{Metadata: &chart.Metadata{Name: "remote", Version: "1.0.0", APIVersion: "v2"},
		Schema: []byte(`{"type":"object","properties":{"a":{"$ref":"https://example.com/a.json"}}}`)}
	parent := &chart.Chart{Metadata: &chart.Metadata{Name: "parent", Version: "1.0.0", APIVersion: "v2"},
		Schema: []byte(`{"type":"object"}`)}
	parent.AddDependency(&chart.Chart{Metadata: &chart.Metadata{Name: "sub", Version: "1.0.0", APIVersion: "v2"}})
	none := &chart.Chart{Metadata: &chart.Metadata{Name: "none", Version: "1.0.0", APIVersion: "v2"}}
	for _, c := range []*chart.Chart{remote, parent, none} {
		checked, err := checkValues(c, map[string]any{"a": 1})
		g.Expect(checked).To(BeFalse(), c.Name())
		g.Expect(err).NotTo(HaveOccurred(), c.Name())
	}
}

// schemaClient records whether each install and upgrade reaching it was
// told to skip Helm's own check of the values.
type schemaClient struct {
	helmclient.ActionInterface
	skipped []bool
}

func (c *schemaClient) Config() *action.Configuration { return &action.Configuration{} }

func (c *schemaClient) Install(_, _ string, _ *chart.Chart, _ map[string]any, opts ...helmclient.InstallOption) (*release.Release, error) {
	i := &action.Install{}
	for _, o := range opts {
		_ = o(i)
	}
	c.skipped = append(c.skipped, i.SkipSchemaValidation)
	return &release.Release{}, nil
}

func (c *schemaClient) Upgrade(_, _ string, _ *chart.Chart, _ map[string]any, opts ...helmclient.UpgradeOption) (*release.Release, error) {
	u := &action.Upgrade{}
	for _, o := range opts {
		_ = o(u)
	}
	c.skipped = append(c.skipped, u.SkipSchemaValidation)
	return &release.Release{}, nil
}

// TestHelmSkipsOnlyTheCheckAlreadyMade: Helm is told to skip its check of
// the values only when the operator made it; values that fail it never
// reach Helm, and the error names them as Helm's would.
func TestHelmSkipsOnlyTheCheckAlreadyMade(t *testing.T) {
	g := NewWithT(t)
	chrt, err := loader.Load(filepath.Join("..", "..", "charts", "challenge"))
	g.Expect(err).NotTo(HaveOccurred())
	inner := &schemaClient{}
	c := &trackedClient{ActionInterface: inner, inFlight: &inFlight{names: map[string]bool{}}, installing: &installing{}}

	_, err = c.Install("web", "ns", chrt, map[string]any{"image": "nginx:1.27"})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = c.Upgrade("web", "ns", chrt, map[string]any{"image": "nginx:1.28"}, dryRun)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(inner.skipped).To(Equal([]bool{true, true}), "checked here, skipped by Helm")

	_, err = c.Install("web", "ns", chrt, map[string]any{"image": "nginx 1.27"})
	g.Expect(err).To(MatchError(ContainSubstring("values don't meet the specifications of the schema(s)")))
	_, err = c.Upgrade("web", "ns", chrt, map[string]any{"image": "nginx 1.27"}, dryRun)
	g.Expect(err).To(MatchError(ContainSubstring("at '/image'")))
	g.Expect(inner.skipped).To(HaveLen(2), "values that fail never reach Helm")

	bare := &chart.Chart{Metadata: &chart.Metadata{Name: "bare", Version: "1.0.0", APIVersion: "v2"}}
	_, err = c.Install("web", "ns", bare, map[string]any{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(inner.skipped).To(Equal([]bool{true, true, false}), "a chart the operator does not check is checked by Helm")
}
