package bundle

import (
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/operator-framework/api/pkg/manifests"
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
	"files":                []any{map[string]any{"key": "f0", "path": "/etc/app.conf", "content": "a = 1\n", "mode": 292}},
	"security": map[string]any{"profile": "restricted", "pod": map[string]any{"runAsNonRoot": true},
		"container": map[string]any{"allowPrivilegeEscalation": false}},
}

// exposures are the ways charts/challenge exposes an instance with objects of their own.
var exposures = []map[string]any{
	{"type": "Ingress", "host": "web.ctf.example"},
	{"type": "TLSRoute", "host": "web.ctf.example", "gateway": map[string]any{"namespace": "gateways", "name": "ctf"}},
	{"type": "HTTPRoute", "host": "web.ctf.example", "gateway": map[string]any{"namespace": "gateways", "name": "ctf"}},
}

// renderedEveryExposure is renderedResources of vals under each exposure.
func renderedEveryExposure(t *testing.T, vals map[string]any) []string {
	var out []string
	for _, e := range exposures {
		v := maps.Clone(vals)
		v["expose"] = e
		out = append(out, renderedResources(t, v)...)
	}
	return uniqueSorted(out)
}

// withoutNamespacePerInstance is everyFeature as an install without
// --namespace-per-instance renders it.
func withoutNamespacePerInstance() map[string]any {
	vals := maps.Clone(everyFeature)
	vals["namespacePerInstance"] = map[string]any{"enabled": false}
	return vals
}

// namespacePerInstanceKinds are what only --namespace-per-instance renders.
var namespacePerInstanceKinds = []string{"limitranges", "namespaces", "resourcequotas"}

// manage are the verbs of full control.
var manage = []string{"create", "delete", "get", "list", "patch", "update", "watch"}

// renderedResources renders the chart with vals and returns the resources
// (group/resource) of the objects it creates.
func renderedResources(t *testing.T, vals map[string]any) []string {
	g := NewWithT(t)
	chrt, err := loader.Load(filepath.Join(root, "charts", "challenge"))
	g.Expect(err).NotTo(HaveOccurred())
	rv, err := chartutil.ToRenderValues(chrt, vals, chartutil.ReleaseOptions{Name: "web", Namespace: "ctf", IsInstall: true}, nil)
	g.Expect(err).NotTo(HaveOccurred())
	out, err := engine.Render(chrt, rv)
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

// readClusterRole reads a ClusterRole controller-gen wrote.
func readClusterRole(t *testing.T, path ...string) rbacv1.ClusterRole {
	g := NewWithT(t)
	data, err := os.ReadFile(filepath.Join(append([]string{root}, path...)...))
	g.Expect(err).NotTo(HaveOccurred())
	var role rbacv1.ClusterRole
	g.Expect(yaml.Unmarshal(data, &role)).To(Succeed())
	return role
}

// classify returns the group/resources rules grant full control of, and the
// verbs of every other group/resource. It fails on wildcards and on the verbs
// that let a subject grant itself more.
func classify(g Gomega, rules []rbacv1.PolicyRule) (managed map[string]bool, other map[string][]string) {
	managed, other = map[string]bool{}, map[string][]string{}
	for _, rule := range rules {
		for _, verb := range rule.Verbs {
			g.Expect(verb).NotTo(BeElementOf("*", "escalate", "bind", "impersonate"), "rule %v", rule)
		}
		for _, group := range rule.APIGroups {
			g.Expect(group).NotTo(Equal("*"))
			for _, res := range rule.Resources {
				g.Expect(res).NotTo(Equal("*"))
				gr := schema.GroupResource{Group: group, Resource: res}.String()
				// The operator's own API is its own need, never a rendered kind.
				if slices.Equal(sortedCopy(rule.Verbs), manage) && group != ctfGroup {
					managed[gr] = true
				} else {
					other[gr] = sortedCopy(rule.Verbs)
				}
			}
		}
	}
	return managed, other
}

// ctfGroup is the operator's own API group.
const ctfGroup = "ctf.challenge-operator.io"

// operatorOwnNeeds are the rights besides full control of the rendered kinds.
var operatorOwnNeeds = map[string][]string{
	"challenges.ctf.challenge-operator.io":                {"create", "delete", "get", "list", "patch", "update", "watch"}, // pools create theirs
	"challenges/status.ctf.challenge-operator.io":         {"get", "patch", "update"},
	"challenges/finalizers.ctf.challenge-operator.io":     {"update"},
	"challengetemplates.ctf.challenge-operator.io":        {"get", "list", "watch"},
	"challengetemplates/status.ctf.challenge-operator.io": {"get", "patch", "update"},
	"nodes":                              {"get", "list", "watch"},
	"pods":                               {"get", "list", "watch"},
	"pods/ephemeralcontainers":           {"update"},               // a pooled instance's team's flags, written at claim
	"replicasets.apps":                   {"list", "watch"},        // a teardown waits for them
	"gateways.gateway.networking.k8s.io": {"get", "list", "watch"}, // where a route's listener is
	"events":                             {"create", "patch"},
	"events.events.k8s.io":               {"create", "patch"},
	"jobs.batch":                         {"create", "delete", "get", "list", "watch"}, // solver checks' runs
}

// TestRolesCoverExactlyWhatTheChartRenders checks the generated ClusterRoles:
// together, manager-role and namespace-per-instance-role give full control of
// every kind the chart renders with every feature on (plus Secrets, where Helm
// stores releases), read-only access to what the status is computed from, the
// operator's own API, events, and nothing else: no wildcard, no escalation.
// manager-role alone holds no right on Namespaces, ResourceQuotas or
// LimitRanges: only --namespace-per-instance renders them.
func TestRolesCoverExactlyWhatTheChartRenders(t *testing.T) {
	g := NewWithT(t)
	manager := readClusterRole(t, "config", "rbac", "role.yaml")
	perInstance := readClusterRole(t, "config", "namespace-per-instance", "role.yaml")
	g.Expect(manager.Name).To(Equal("manager-role"))
	g.Expect(perInstance.Name).To(Equal("namespace-per-instance-role"))

	managed, other := classify(g, manager.Rules)
	for _, kind := range namespacePerInstanceKinds {
		g.Expect(managed).NotTo(HaveKey(kind), "manager-role has no right on %s", kind)
		g.Expect(other).NotTo(HaveKey(kind), "manager-role has no right on %s", kind)
	}
	g.Expect(other).To(Equal(operatorOwnNeeds), "the operator's own needs, and nothing more")
	g.Expect(sortedKeys(managed)).To(Equal(uniqueSorted(append(renderedEveryExposure(t, withoutNamespacePerInstance()), "secrets"))),
		"manager-role: full control of exactly what the chart renders without a namespace per instance")

	extraManaged, extraOther := classify(g, perInstance.Rules)
	g.Expect(extraOther).To(BeEmpty())
	g.Expect(sortedKeys(extraManaged)).To(Equal(namespacePerInstanceKinds), "namespace-per-instance-role: those kinds only")

	want := append(renderedEveryExposure(t, everyFeature), "secrets") // Helm's release storage
	g.Expect(want).To(ContainElements("deployments.apps", "services", "networkpolicies.networking.k8s.io",
		"ingresses.networking.k8s.io", "serviceaccounts", "secrets", "namespaces", "resourcequotas", "limitranges",
		"tlsroutes.gateway.networking.k8s.io", "httproutes.gateway.networking.k8s.io"))
	maps.Copy(managed, extraManaged)
	g.Expect(sortedKeys(managed)).To(Equal(uniqueSorted(want)), "together: full control of exactly the rendered kinds")
}

// TestEveryRBACMarkerIsGenerated reads the controller-gen invocations of
// `make manifests`: each package with +kubebuilder:rbac markers must be read
// by exactly one of them, or its rights would be missing (or granted twice,
// the namespace-per-instance ones to every install).
func TestEveryRBACMarkerIsGenerated(t *testing.T) {
	g := NewWithT(t)
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	g.Expect(err).NotTo(HaveOccurred())
	invocation := regexp.MustCompile(`\brbac:roleName=(\S+)\s.*\bpaths="([^"]+)"`)
	paths := map[string][]string{} // role -> package patterns
	for _, m := range invocation.FindAllStringSubmatch(string(makefile), -1) {
		paths[m[1]] = strings.Split(m[2], ";")
	}
	g.Expect(paths).To(HaveKey("manager-role"))
	g.Expect(paths).To(HaveKeyWithValue("namespace-per-instance-role", []string{"./internal/operator/nsperinstance"}))

	marked := map[string]bool{} // packages with markers, as ./dir
	g.Expect(filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() && rel != "." {
			// Neither the tools in ./bin, hidden directories, nor nested modules (hack/tools) are the operator's.
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil || rel == "bin" || strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if regexp.MustCompile(`(?m)^\s*// *\+kubebuilder:rbac:`).Match(data) {
			marked[packagePath(filepath.Dir(rel))] = true
		}
		return nil
	})).To(Succeed())
	g.Expect(marked).To(HaveKey("./internal/operator/nsperinstance"))
	for pkg := range marked {
		var readBy []string
		for role, patterns := range paths {
			for _, p := range patterns {
				if p == pkg || (strings.HasSuffix(p, "/...") && (pkg == strings.TrimSuffix(p, "/...") ||
					strings.HasPrefix(pkg, strings.TrimSuffix(p, "...")))) {
					readBy = append(readBy, role)
				}
			}
		}
		g.Expect(readBy).To(HaveLen(1), "%s has +kubebuilder:rbac markers: one controller-gen rbac run of `make manifests` must read it", pkg)
	}
}

// packagePath writes a directory relative to the root as a package pattern does: ./dir.
func packagePath(dir string) string {
	if dir == "." {
		return "."
	}
	return "./" + filepath.ToSlash(dir)
}

// TestNamespacedRBACIsGenerated checks that config/namespaced/role.yaml is
// what `make manifests` writes from config/rbac/role.yaml.
func TestNamespacedRBACIsGenerated(t *testing.T) {
	g := NewWithT(t)
	want, err := NamespacedRBAC(filepath.Join(root, "config", "rbac", "role.yaml"), filepath.Join(root, "config", "crd"))
	g.Expect(err).NotTo(HaveOccurred())
	committed, err := os.ReadFile(filepath.Join(root, "config", "namespaced", "role.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(committed)).To(Equal(string(want)), "config/namespaced/role.yaml is up to date (make manifests)")
}

// TestCSVPermissionsAreScoped checks the bundle's install strategy: the
// rights on the kinds the chart renders (without a namespace per instance)
// are permissions, which OLM limits to the OperatorGroup's namespaces, and
// clusterPermissions hold cluster-scoped resources only. The rights on
// Namespaces are in neither.
func TestCSVPermissionsAreScoped(t *testing.T) {
	g := NewWithT(t)
	b, err := manifests.GetBundleFromDir(filepath.Join(root, "bundle"))
	g.Expect(err).NotTo(HaveOccurred())
	s := builtinScopes()
	for _, crd := range b.V1CRDs {
		s.addCRD(crd)
	}
	spec := b.CSV.Spec.InstallStrategy.StrategySpec
	g.Expect(spec.Permissions).NotTo(BeEmpty())
	g.Expect(spec.ClusterPermissions).NotTo(BeEmpty())

	var permitted []rbacv1.PolicyRule
	for _, p := range spec.Permissions {
		g.Expect(p.ServiceAccountName).To(Equal(spec.DeploymentSpecs[0].Spec.Template.Spec.ServiceAccountName))
		permitted = append(permitted, p.Rules...)
		_, cluster, err := s.split(p.Rules)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(cluster).To(BeEmpty(), "permissions name namespaced resources only")
	}
	managed, other := classify(g, permitted)
	g.Expect(sortedKeys(managed)).To(ContainElements(uniqueSorted(append(renderedEveryExposure(t, withoutNamespacePerInstance()), "secrets"))),
		"permissions: full control of what the chart renders")
	g.Expect(other).To(HaveKey("challenges.ctf.challenge-operator.io"))

	var clusterWide []rbacv1.PolicyRule
	for _, p := range spec.ClusterPermissions {
		g.Expect(p.ServiceAccountName).To(Equal(spec.DeploymentSpecs[0].Spec.Template.Spec.ServiceAccountName))
		ns, _, err := s.split(p.Rules)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(ns).To(BeEmpty(), "clusterPermissions name no namespaced resource")
		clusterWide = append(clusterWide, p.Rules...)
	}
	clusterManaged, clusterOther := classify(g, clusterWide)
	g.Expect(clusterManaged).To(BeEmpty())
	g.Expect(clusterOther).To(Equal(map[string][]string{
		"challengetemplates.ctf.challenge-operator.io":        {"get", "list", "watch"},
		"challengetemplates/status.ctf.challenge-operator.io": {"get", "patch", "update"},
		"nodes":                              {"get", "list", "watch"},
		"tokenreviews.authentication.k8s.io": {"create"}, // the metrics endpoint's callers
		"subjectaccessreviews.authorization.k8s.io": {"create"},
	}))
	for _, kind := range namespacePerInstanceKinds {
		g.Expect(managed).NotTo(HaveKey(kind), "no rights on %s: namespace per instance is not in the bundle", kind)
		g.Expect(other).NotTo(HaveKey(kind), "no rights on %s: namespace per instance is not in the bundle", kind)
	}
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
