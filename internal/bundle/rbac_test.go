package bundle

import (
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

// everyFeature turns on every optional part of charts/challenge.
var everyFeature = map[string]any{
	"participant": "team-1", "challenge": "web", "image": "registry.example/web:1",
	"expose":               map[string]any{"type": "Ingress", "host": "web.ctf.example"},
	"flag":                 map[string]any{"enabled": true, "secretName": "web-flag", "value": "CTF{x}"},
	"namespacePerInstance": map[string]any{"enabled": true, "name": "ctf-web"},
	"networkPolicy":        map[string]any{"egress": []any{map[string]any{"name": "api", "cidr": "198.51.100.0/24"}}},
}

// renderedResources renders the chart with every feature on and returns the
// resources (group/resource) of the objects it creates.
func renderedResources(t *testing.T) []string {
	g := NewWithT(t)
	chrt, err := loader.Load(filepath.Join(root, "charts", "challenge"))
	g.Expect(err).NotTo(HaveOccurred())
	vals, err := chartutil.ToRenderValues(chrt, everyFeature, chartutil.ReleaseOptions{Name: "web", Namespace: "ctf", IsInstall: true}, nil)
	g.Expect(err).NotTo(HaveOccurred())
	out, err := engine.Render(chrt, vals)
	g.Expect(err).NotTo(HaveOccurred())
	set := map[string]bool{}
	for name, doc := range out {
		if !strings.HasSuffix(name, ".yaml") {
			continue
		}
		for _, part := range strings.Split(doc, "\n---") {
			u := &unstructured.Unstructured{}
			g.Expect(yaml.Unmarshal([]byte(part), &u.Object)).To(Succeed(), name)
			if len(u.Object) == 0 {
				continue
			}
			gvk := u.GroupVersionKind()
			plural, _ := meta.UnsafeGuessKindToResource(gvk)
			set[schema.GroupResource{Group: gvk.Group, Resource: plural.Resource}.String()] = true
		}
	}
	return sortedKeys(set)
}

// TestRoleCoversExactlyWhatTheChartRenders checks the generated ClusterRole:
// full control of every kind the chart renders (plus Secrets, where Helm
// stores releases), read-only access to what the status is computed from,
// the operator's own API, events, and nothing else: no wildcard, no escalation.
func TestRoleCoversExactlyWhatTheChartRenders(t *testing.T) {
	g := NewWithT(t)
	data, err := os.ReadFile(filepath.Join(root, "config", "rbac", "role.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	var role rbacv1.ClusterRole
	g.Expect(yaml.Unmarshal(data, &role)).To(Succeed())

	manage := []string{"create", "delete", "get", "list", "patch", "update", "watch"}
	managed, other := map[string]bool{}, map[string][]string{}
	for _, rule := range role.Rules {
		for _, verb := range rule.Verbs {
			g.Expect(verb).NotTo(BeElementOf("*", "escalate", "bind", "impersonate"), "rule %v", rule)
		}
		for _, group := range rule.APIGroups {
			g.Expect(group).NotTo(Equal("*"))
			for _, res := range rule.Resources {
				g.Expect(res).NotTo(Equal("*"))
				gr := schema.GroupResource{Group: group, Resource: res}.String()
				if slices.Equal(sortedCopy(rule.Verbs), manage) {
					managed[gr] = true
				} else {
					other[gr] = sortedCopy(rule.Verbs)
				}
			}
		}
	}
	want := append(renderedResources(t), "secrets") // Helm's release storage
	g.Expect(want).To(ContainElements("deployments.apps", "services", "networkpolicies.networking.k8s.io",
		"ingresses.networking.k8s.io", "serviceaccounts", "secrets", "namespaces", "resourcequotas", "limitranges"))
	g.Expect(sortedKeys(managed)).To(Equal(uniqueSorted(want)), "full control of exactly the rendered kinds")
	g.Expect(other).To(Equal(map[string][]string{
		"challenges.ctf.challenge-operator.io":                {"delete", "get", "list", "patch", "update", "watch"},
		"challenges/status.ctf.challenge-operator.io":         {"get", "patch", "update"},
		"challenges/finalizers.ctf.challenge-operator.io":     {"update"},
		"challengetemplates.ctf.challenge-operator.io":        {"get", "list", "watch"},
		"challengetemplates/status.ctf.challenge-operator.io": {"get", "patch", "update"},
		"nodes":                {"get", "list", "watch"},
		"pods":                 {"get", "list", "watch"},
		"events":               {"create", "patch"},
		"events.events.k8s.io": {"create", "patch"},
	}), "the operator's own needs, and nothing more")
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func sortedCopy(s []string) []string {
	out := slices.Clone(s)
	sort.Strings(out)
	return out
}

func uniqueSorted(s []string) []string {
	out := sortedCopy(s)
	return slices.Compact(out)
}
