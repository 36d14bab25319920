package bundle

import (
	"testing"

	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func rule(groups, resources []string, verbs ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{APIGroups: groups, Resources: resources, Verbs: verbs}
}

// TestSplitByScope: rules on namespaced resources go where a Role (or a CSV's
// permissions) can grant them, the rest where only a ClusterRole can; nothing
// is lost, nothing is guessed.
func TestSplitByScope(t *testing.T) {
	s := builtinScopes()
	s.addCRD(&apiextensionsv1.CustomResourceDefinition{Spec: apiextensionsv1.CustomResourceDefinitionSpec{
		Group: "ctf.challenge-operator.io", Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "challengetemplates"},
		Scope: apiextensionsv1.ClusterScoped}})
	s.addCRD(&apiextensionsv1.CustomResourceDefinition{Spec: apiextensionsv1.CustomResourceDefinitionSpec{
		Group: "ctf.challenge-operator.io", Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "challenges"},
		Scope: apiextensionsv1.NamespaceScoped}})
	// A resource of the same name in two groups, of different scopes.
	s[schema.GroupResource{Group: "a.example", Resource: "things"}] = true
	s[schema.GroupResource{Group: "b.example", Resource: "things"}] = false
	core, ctf := []string{""}, []string{"ctf.challenge-operator.io"}
	tests := []struct {
		name                string
		rules               []rbacv1.PolicyRule
		namespaced, cluster []rbacv1.PolicyRule
		err                 string
	}{
		{
			name:       "a namespaced rule is kept whole",
			rules:      []rbacv1.PolicyRule{rule([]string{"", "events.k8s.io"}, []string{"events"}, "create", "patch")},
			namespaced: []rbacv1.PolicyRule{rule([]string{"", "events.k8s.io"}, []string{"events"}, "create", "patch")},
		},
		{
			name:    "a cluster-scoped rule is kept whole",
			rules:   []rbacv1.PolicyRule{rule(core, []string{"namespaces"}, "get")},
			cluster: []rbacv1.PolicyRule{rule(core, []string{"namespaces"}, "get")},
		},
		{
			name:       "a mixed rule is split by resource, verbs kept",
			rules:      []rbacv1.PolicyRule{rule(core, []string{"nodes", "pods"}, "get", "list", "watch")},
			namespaced: []rbacv1.PolicyRule{rule(core, []string{"pods"}, "get", "list", "watch")},
			cluster:    []rbacv1.PolicyRule{rule(core, []string{"nodes"}, "get", "list", "watch")},
		},
		{
			name:       "subresources take their parent's scope, from the CRD",
			rules:      []rbacv1.PolicyRule{rule(ctf, []string{"challenges/status", "challengetemplates/status"}, "get", "update")},
			namespaced: []rbacv1.PolicyRule{rule(ctf, []string{"challenges/status"}, "get", "update")},
			cluster:    []rbacv1.PolicyRule{rule(ctf, []string{"challengetemplates/status"}, "get", "update")},
		},
		{
			name:       "a mixed rule over several groups is split by group",
			rules:      []rbacv1.PolicyRule{rule([]string{"a.example", "b.example"}, []string{"things"}, "get")},
			namespaced: []rbacv1.PolicyRule{rule([]string{"a.example"}, []string{"things"}, "get")},
			cluster:    []rbacv1.PolicyRule{rule([]string{"b.example"}, []string{"things"}, "get")},
		},
		{
			name: "resource names stay with their rule",
			rules: []rbacv1.PolicyRule{{APIGroups: core, Resources: []string{"secrets", "namespaces"},
				ResourceNames: []string{"x"}, Verbs: []string{"get"}}},
			namespaced: []rbacv1.PolicyRule{{APIGroups: core, Resources: []string{"secrets"}, ResourceNames: []string{"x"}, Verbs: []string{"get"}}},
			cluster:    []rbacv1.PolicyRule{{APIGroups: core, Resources: []string{"namespaces"}, ResourceNames: []string{"x"}, Verbs: []string{"get"}}},
		},
		{
			name:    "non-resource URLs are cluster-wide",
			rules:   []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}},
			cluster: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}},
		},
		{
			name:  "a wildcard has no scope",
			rules: []rbacv1.PolicyRule{rule(core, []string{"*"}, "get")},
			err:   `scope of "*"`,
		},
		{
			name:  "an unknown resource is refused, not guessed",
			rules: []rbacv1.PolicyRule{rule([]string{"example.com"}, []string{"widgets"}, "get")},
			err:   `scope of "widgets" in API group "example.com" is unknown`,
		},
		{
			name:  "a rule without resources is refused",
			rules: []rbacv1.PolicyRule{rule(core, nil, "get")},
			err:   "names no resource of any API group",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			namespaced, cluster, err := s.split(tt.rules)
			if tt.err != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.err)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(namespaced).To(Equal(tt.namespaced))
			g.Expect(cluster).To(Equal(tt.cluster))
		})
	}
}

// TestRoleNamingClusterScopedResourceIsRefused: a Role cannot grant rights
// on cluster-scoped resources, so the bundle refuses to pretend it does.
func TestRoleNamingClusterScopedResourceIsRefused(t *testing.T) {
	g := NewWithT(t)
	s := builtinScopes()
	g.Expect(s.checkNamespaced([]rbacv1.PolicyRule{rule([]string{"coordination.k8s.io"}, []string{"leases"}, "get")})).To(Succeed())
	g.Expect(s.checkNamespaced([]rbacv1.PolicyRule{rule([]string{""}, []string{"pods", "nodes"}, "get")})).
		To(MatchError(ContainSubstring("a Role cannot grant [get] on [nodes]")))
}
