package operator_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/operator"
	"github.com/challenge-operator/challenge-operator/internal/values"
	"github.com/challenge-operator/challenge-operator/test/builders"
)

// TestIngressFromTheInstancesOwnNamespace: a Challenge created in a namespace
// the operator lets in (--ingress-from-namespaces) would open its instance to
// every pod there, other instances' among them: the gate refuses the release
// and nothing is applied.
func TestIngressFromTheInstancesOwnNamespace(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ingressNamespace,
		Labels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}}}
	g.Expect(k8s.Create(ctx, ns)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), ns) })

	ch := builders.Challenge(ingressNamespace, "open-to-all", "team-open")
	g.Expect(k8s.Create(ctx, ch)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), ch) })
	got := eventuallyPhase(t, ch, ctfv1alpha1.PhaseError)
	g.Expect(got.Status.Reason).To(Equal("PolicyViolation"), got.Status.Message)
	g.Expect(got.Status.Message).To(ContainSubstring(`network-ingress`))
	g.Expect(got.Status.Message).To(ContainSubstring(`namespace "ingress-nginx" is the instance's own`))
	g.Expect(instanceObjects(g, ctx, ch)).To(BeEmpty(), "a refused release applies nothing")
}

// TestCheckIngressFrom: the operator refuses to start when a namespace it lets
// into every instance is one Challenges are created in, unless each instance
// runs in a namespace of its own.
func TestCheckIngressFrom(t *testing.T) {
	tests := []struct {
		name       string
		perInst    bool
		ingress    []string
		challenges []string
		refused    bool
	}{
		{"the ingress controller's namespace", false, []string{"ingress-nginx"}, []string{"ctf-teams"}, false},
		{"the watched namespace", false, []string{"ingress-nginx", "ctf-teams"}, []string{"ctf-teams"}, true},
		{"the instancer's namespace", false, []string{"ctf"}, []string{"ctf-teams", "ctf"}, true},
		{"all namespaces watched: the gate decides per instance", false, []string{"ctf"}, nil, false},
		{"a namespace per instance: the Challenges' namespace holds none", true, []string{"ctf-teams"}, []string{"ctf-teams"}, false},
		{"a namespace per instance: an instance's namespace", true, []string{"ingress-nginx", "ctf-teams-web-team1-0123456789"}, []string{"ctf-teams"}, true},
		{"a namespace per instance, all watched: an instance's namespace", true, []string{"t1-web-team1-abcdef0123"}, nil, true},
		{"a namespace per instance: a hash-like name elsewhere", true, []string{"platform-abcdef0123"}, []string{"ctf-teams"}, false},
		{"the pool's namespace", false, []string{"ctf-pool"}, nil, true},
		{"a namespace per instance: the pool's namespace holds none", true, []string{"ctf-pool"}, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := operator.Options{Values: values.Settings{NamespacePerInstance: tt.perInst, IngressFromNamespaces: tt.ingress}}
			if tt.challenges == nil {
				opts.PoolNamespace = "ctf-pool" // watched, as every namespace is
			}
			err := operator.CheckIngressFrom(opts, tt.challenges)
			if tt.refused {
				NewWithT(t).Expect(err).To(MatchError(ContainSubstring("where instances run")))
			} else {
				NewWithT(t).Expect(err).NotTo(HaveOccurred())
			}
		})
	}
	opts := operator.Options{PoolNamespace: "ctf-pool"}
	NewWithT(t).Expect(operator.CheckIngressFrom(opts, []string{"ctf-teams"})).To(MatchError(ContainSubstring("not among the watched namespaces")),
		"a pool the operator does not watch would never be installed")
}
