package action

import (
	"context"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/storage/driver"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/challenge-operator/challenge-operator/test/controlplane"
)

// pathCounter counts an API client's requests by path.
type pathCounter struct {
	requestCounter
}

func (c *pathCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		c.mu.Lock()
		c.counts[req.URL.Path]++
		c.mu.Unlock()
		return rt.RoundTrip(req)
	})
}

// TestDiscoveryIsAskedOncePerTTL runs what a reconcile's Helm actions do
// (the reconciler's two Gets of the release, an install) three times
// against a real API server, counting the discovery requests: the version
// (each Get and install checks reachability, the install reads the
// capabilities) and the discovery documents, which Helm invalidates before
// each install. They were asked for in every reconcile, four and two times;
// now once, until the answers are discoveryTTL old.
func TestDiscoveryIsAskedOncePerTTL(t *testing.T) {
	g := NewWithT(t)
	cfg, _ := controlplane.StartAPIServer(t)
	counter := &pathCounter{requestCounter{counts: map[string]int{}}}
	counted := rest.CopyConfig(cfg)
	counted.WrapTransport = counter.wrap
	httpClient, err := rest.HTTPClientFor(counted)
	g.Expect(err).NotTo(HaveOccurred())
	mapper, err := apiutil.NewDynamicRESTMapper(counted, httpClient)
	g.Expect(err).NotTo(HaveOccurred())
	configs, err := helmclient.NewActionConfigGetter(counted, mapper, helmclient.StorageDriverMapper(
		func(context.Context, client.Object, *rest.Config) (driver.Driver, error) {
			return driver.NewMemory(), nil
		}))
	g.Expect(err).NotTo(HaveOccurred())
	getter, err := NewClientGetter(configs, events.NewFakeRecorder(10))
	g.Expect(err).NotTo(HaveOccurred())
	now := time.Now()
	getter.discovery.now = func() time.Time { return now }

	obj := &unstructured.Unstructured{}
	obj.SetNamespace("default")
	obj.SetName("discovery")
	obj.SetUID("uid-discovery")
	chrt := &chart.Chart{Metadata: &chart.Metadata{APIVersion: chart.APIVersionV2, Name: "challenge", Version: "0.1.0", KubeVersion: ">=1.30.0-0"}}
	reconcile := func() {
		t.Helper()
		ac, err := getter.ActionClientFor(context.Background(), obj)
		g.Expect(err).NotTo(HaveOccurred())
		for range 2 {
			_, err = ac.Get(obj.GetName())
			g.Expect(err).To(MatchError(driver.ErrReleaseNotFound))
		}
		rel, err := ac.Install(obj.GetName(), obj.GetNamespace(), chrt, nil, func(i *action.Install) error { i.DryRun = true; return nil })
		g.Expect(err).NotTo(HaveOccurred(), "the chart's kubeVersion is checked against the capabilities kept")
		g.Expect(rel.Name).To(Equal(obj.GetName()))
	}
	discovery := func() map[string]int {
		counter.mu.Lock()
		defer counter.mu.Unlock()
		return map[string]int{"/version": counter.counts["/version"], "/api": counter.counts["/api"], "/apis": counter.counts["/apis"]}
	}

	before := discovery()
	for range 3 {
		reconcile()
	}
	// Reachability once, the capabilities' version and documents once.
	g.Expect(discovery()).To(Equal(map[string]int{"/version": before["/version"] + 2, "/api": before["/api"] + 1, "/apis": before["/apis"] + 1}))

	now = now.Add(discoveryTTL)
	reconcile()
	g.Expect(discovery()).To(Equal(map[string]int{"/version": before["/version"] + 4, "/api": before["/api"] + 2, "/apis": before["/apis"] + 2}),
		"stale answers are asked again")
}
