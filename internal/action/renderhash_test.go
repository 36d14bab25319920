package action

import (
	"testing"

	. "github.com/onsi/gomega"
	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
)

// recordingClient stores releases as Helm would and counts the upgrades
// that reach it; only the storage matters to the render-hash logic.
type recordingClient struct {
	helmclient.ActionInterface
	cfg      *action.Configuration
	upgrades int
}

func (c *recordingClient) Config() *action.Configuration { return c.cfg }

func (c *recordingClient) Install(name, ns string, _ *chart.Chart, _ map[string]any, opts ...helmclient.InstallOption) (*release.Release, error) {
	i := &action.Install{}
	for _, o := range opts {
		if err := o(i); err != nil {
			return nil, err
		}
	}
	rel := &release.Release{Name: name, Namespace: ns, Version: 1, Labels: i.Labels, Info: &release.Info{Status: release.StatusDeployed}}
	return rel, c.cfg.Releases.Create(rel)
}

func (c *recordingClient) Upgrade(name, _ string, _ *chart.Chart, _ map[string]any, _ ...helmclient.UpgradeOption) (*release.Release, error) {
	c.upgrades++
	return c.cfg.Releases.Last(name)
}

func dryRun(u *action.Upgrade) error { u.DryRun, u.DryRunOption = true, "server"; return nil }

// TestUnchangedRenderSkipsTheDryRun: a dry-run upgrade of a deployed release
// rendered from the same chart, values and inputs is answered with the
// release itself; any change, or a release not deployed, goes to Helm.
func TestUnchangedRenderSkipsTheDryRun(t *testing.T) {
	g := NewWithT(t)
	chrt := &chart.Chart{Metadata: &chart.Metadata{Name: "challenge", Version: "0.1.0"},
		Templates: []*chart.File{{Name: "templates/deployment.yaml", Data: []byte("kind: Deployment")}}}
	vals := map[string]any{"image": "registry.example/web:1", "ports": []any{map[string]any{"name": "http", "port": 8080}}}
	inner := &recordingClient{cfg: &action.Configuration{Releases: storage.Init(driver.NewMemory())}}
	client := func(inputs string) *trackedClient {
		return &trackedClient{ActionInterface: inner, inFlight: &inFlight{names: map[string]bool{}}, hashing: true, renderInputs: inputs, installing: &installing{}}
	}

	_, err := client("template/1").Install("web", "ns", chrt, vals)
	g.Expect(err).NotTo(HaveOccurred())
	stored, err := inner.cfg.Releases.Last("web")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(stored.Labels).To(HaveKey(RenderHashLabel), "the install records its render hash")

	rel, err := client("template/1").Upgrade("web", "ns", chrt, map[string]any{"ports": vals["ports"], "image": vals["image"]}, dryRun)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rel.Version).To(Equal(1))
	g.Expect(inner.upgrades).To(BeZero(), "same render (key order aside): no dry run")

	for what, c := range map[string]struct {
		inputs string
		vals   map[string]any
		chrt   *chart.Chart
	}{
		"values":   {"template/1", map[string]any{"image": "registry.example/web:2"}, chrt},
		"template": {"template/2", vals, chrt},
		"chart":    {"template/1", vals, &chart.Chart{Metadata: &chart.Metadata{Name: "challenge", Version: "0.2.0"}}},
	} {
		before := inner.upgrades
		_, err := client(c.inputs).Upgrade("web", "ns", c.chrt, c.vals, dryRun)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(inner.upgrades).To(Equal(before+1), "a changed %s is dry-run", what)
	}

	stored.Info.Status = release.StatusFailed
	g.Expect(inner.cfg.Releases.Update(stored)).To(Succeed())
	_, err = client("template/1").Upgrade("web", "ns", chrt, vals, dryRun)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(inner.upgrades).To(Equal(4), "a failed release is always dry-run (and then upgraded)")
}
