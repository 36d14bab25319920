package policy

import (
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// TestCheckIdentity: a stored release record passes when every object it
// lists is the instance's own (kind, name, namespace), whatever its spec; it
// is refused, naming the rule, when it lists anything else.
func TestCheckIdentity(t *testing.T) {
	for _, tt := range []struct {
		name  string
		own   bool
		apply func(*fixture)
		rule  string // "" passes
	}{
		{name: "the release as rendered", apply: func(*fixture) {}},
		{name: "with a namespace of its own", own: true, apply: func(*fixture) {}},
		{name: "a spec the policy now refuses", apply: func(fx *fixture) { fx.deploy.Spec.Replicas = ptr.To[int32](9) }},
		{name: "labels changed since", apply: func(fx *fixture) { fx.sa.Labels = nil }},
		{name: "another ServiceAccount", rule: ruleName, apply: func(fx *fixture) {
			sa := serviceAccount()
			sa.Name = "bystander"
			fx.extra = append(fx.extra, sa)
		}},
		{name: "an object in another namespace", rule: ruleNamespace, apply: func(fx *fixture) { fx.np.Namespace = "kube-system" }},
		{name: "another Secret", rule: ruleSecret, apply: func(fx *fixture) { fx.secret.Name = "registry-credentials" }},
		{name: "a kind outside the allowlist", rule: ruleKind, apply: raw("apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: web-team1\n  namespace: ctf-team1\n")},
		{name: "a Namespace without one of its own", rule: ruleKind, apply: func(fx *fixture) { fx.extra = append(fx.extra, namespaceObj()) }},
		{name: "another Namespace", own: true, rule: ruleNamespace, apply: func(fx *fixture) {
			ns := namespaceObj()
			ns.Name = "bystander"
			fx.extra = append(fx.extra, ns)
		}},
		{name: "an object twice", rule: ruleDuplicate, apply: func(fx *fixture) { fx.extra = append(fx.extra, service()) }},
		{name: "a ResourceQuota without a namespace of its own", rule: ruleKind, apply: func(fx *fixture) {
			fx.extra = append(fx.extra, &corev1.ResourceQuota{TypeMeta: typeMeta("v1", "ResourceQuota"), ObjectMeta: meta(release)})
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			fx := newFixture(tt.own, false)
			tt.apply(fx)
			err := CheckIdentity(fx.render(), fx.in)
			if tt.rule == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			var v *Violation
			g.Expect(errors.As(err, &v)).To(BeTrue(), "want a Violation, got %v", err)
			g.Expect(v.Rule).To(Equal(tt.rule), v.Error())
		})
	}
}
