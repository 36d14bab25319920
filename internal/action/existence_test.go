package action

import (
	"testing"

	. "github.com/onsi/gomega"
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
