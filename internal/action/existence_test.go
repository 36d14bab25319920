package action

import (
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestRequestPathsNameWhatTheyTouch: only a collection or a single
// object of a resource is recognised, below the API server's own path;
// a subresource, or any other path, is not (its request is left alone).
func TestRequestPathsNameWhatTheyTouch(t *testing.T) {
	g := NewWithT(t)
	svc := schema.GroupResource{Resource: "services"}
	deploy := schema.GroupResource{Group: "apps", Resource: "deployments"}
	for path, want := range map[string]*object{
		"/api/v1/namespaces/team/services/web":                {GroupResource: svc, namespace: "team", name: "web"},
		"/api/v1/namespaces/team/services":                    {GroupResource: svc, namespace: "team"},
		"/apis/apps/v1/namespaces/team/deployments/web":       {GroupResource: deploy, namespace: "team", name: "web"},
		"/apis/apps/v1/namespaces/team/deployments":           {GroupResource: deploy, namespace: "team"},
		"/api/v1/namespaces/team":                             {GroupResource: schema.GroupResource{Resource: "namespaces"}, name: "team"},
		"/api/v1/namespaces/api/services/web":                 {GroupResource: svc, namespace: "api", name: "web"},
		"/apis/apps/v1/namespaces/team/deployments/web/scale": nil,
		"/api/v1/namespaces/team/services/web/status":         nil,
		"/version": nil,
		"/apis":    nil,
		"/api/v1":  nil,
	} {
		got, ok := parsePath("", path)
		if want == nil {
			g.Expect(ok).To(BeFalse(), path)
			continue
		}
		g.Expect(ok).To(BeTrue(), path)
		g.Expect(got).To(Equal(*want), path)
	}
	got, ok := parsePath("/k8s/clusters/c1", "/k8s/clusters/c1/api/v1/namespaces/team/services/web")
	g.Expect(ok).To(BeTrue())
	g.Expect(got).To(Equal(object{GroupResource: svc, namespace: "team", name: "web"}), "below a server's path")
	_, ok = parsePath("/k8s/clusters/c1", "/api/v1/namespaces/team/services/web")
	g.Expect(ok).To(BeFalse(), "not below it")
}

// failedInstallClient leaves a record of a failed install, as Helm does
// when its rollback fails.
type failedInstallClient struct {
	helmclient.ActionInterface
	cfg *action.Configuration
}

func (c *failedInstallClient) Config() *action.Configuration { return c.cfg }

func (c *failedInstallClient) Install(name, ns string, _ *chart.Chart, _ map[string]any, _ ...helmclient.InstallOption) (*release.Release, error) {
	rel := &release.Release{Name: name, Namespace: ns, Version: 1, Info: &release.Info{Status: release.StatusFailed}}
	if err := c.cfg.Releases.Create(rel); err != nil {
		return nil, err
	}
	return nil, errors.New(`serviceaccounts "web" already exists`)
}

// TestFailedInstallThatFoundAnotherObjectLeavesNoRecord: a failed install
// whose create found an object presumed absent leaves no release record,
// even where its rollback failed to purge it: the record lists that
// object, which an upgrade would take over and an uninstall delete. A
// failed install that presumed nothing wrong is left to Helm.
func TestFailedInstallThatFoundAnotherObjectLeavesNoRecord(t *testing.T) {
	for _, wrong := range []bool{true, false} {
		g := NewWithT(t)
		inner := &failedInstallClient{cfg: &action.Configuration{Releases: storage.Init(driver.NewMemory())}}
		check := &installCheck{existence: &Existence{}, presumed: map[string]bool{}, wrong: map[string]bool{}}
		if wrong {
			check.wrong["team//serviceaccounts/web"] = true
		}
		c := &trackedClient{ActionInterface: inner, inFlight: &inFlight{names: map[string]bool{}}, installing: &installing{}, check: check}
		_, err := c.Install("web", "team", &chart.Chart{Metadata: &chart.Metadata{Name: "bare", Version: "1.0.0", APIVersion: "v2"}}, map[string]any{})
		g.Expect(err).To(MatchError(ContainSubstring("already exists")))
		_, err = inner.cfg.Releases.History("web")
		if wrong {
			g.Expect(err).To(MatchError(driver.ErrReleaseNotFound), "purged")
		} else {
			g.Expect(err).NotTo(HaveOccurred(), "left to Helm")
		}
	}
}
