package observability_test

import (
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/challenge-operator/challenge-operator/internal/manifests"
	"github.com/challenge-operator/challenge-operator/test/controlplane"
)

// TestServiceMonitorsScrapeTheMetricsServices builds config/prometheus and
// config/instancer as kustomize does: each ServiceMonitor selects exactly
// one Service in the same namespace, on a port it has, over HTTPS, and the
// job its jobLabel gives is the one the alerts select.
func TestServiceMonitorsScrapeTheMetricsServices(t *testing.T) {
	g := NewWithT(t)
	monitors := build(t, "prometheus", "ServiceMonitor")
	services := build(t, "instancer", "Service")
	wantJobs := map[string]string{
		"challenge-operator-controller-manager-metrics-monitor": "challenge-operator",
		"challenge-operator-instancer-metrics-monitor":          "challenge-operator-instancer",
	}
	g.Expect(monitors).To(HaveLen(len(wantJobs)))
	for _, m := range monitors {
		selector, _, _ := unstructured.NestedStringMap(m.Object, "spec", "selector", "matchLabels")
		jobLabel, _, _ := unstructured.NestedString(m.Object, "spec", "jobLabel")
		endpoints, _, _ := unstructured.NestedSlice(m.Object, "spec", "endpoints")
		g.Expect(endpoints).To(HaveLen(1), m.GetName())
		endpoint := endpoints[0].(map[string]any)
		g.Expect(endpoint["scheme"]).To(Equal("https"), m.GetName())

		var matched []corev1.Service
		for _, o := range services {
			var svc corev1.Service
			g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &svc)).To(Succeed())
			if svc.Namespace == m.GetNamespace() && labels.SelectorFromSet(selector).Matches(labels.Set(svc.Labels)) {
				matched = append(matched, svc)
			}
		}
		g.Expect(matched).To(HaveLen(1), "%s selects one Service", m.GetName())
		svc := matched[0]
		g.Expect(svc.Spec.Ports).To(ContainElement(HaveField("Name", endpoint["port"])), "%s: its port is the Service's", m.GetName())
		g.Expect(svc.Labels[jobLabel]).To(Equal(wantJobs[m.GetName()]), "%s: the job the alerts select", m.GetName())
	}
}

// build returns the objects of kind in the kustomization config/dir.
func build(t *testing.T, dir, kind string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := manifests.Kustomize(filepath.Join(controlplane.RepoRoot(), "config", dir))
	if err != nil {
		t.Fatal(err)
	}
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}
