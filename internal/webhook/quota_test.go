package webhook_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/identity"
	"github.com/challenge-operator/challenge-operator/test/harness"
)

// TestNamespaceQuotaFromTemplate: a template whose container asks 3 CPU and
// 3Gi (beyond the fixed per-workload quota of 2 CPU and 2Gi) runs in a
// namespace of its own: the quota is computed from the template, room for
// its pod and the one a rolling update starts beside it; the quota admits
// the pod the API server would otherwise have refused.
func TestNamespaceQuotaFromTemplate(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	three, threeGi := ctfv1alpha1.Quantity("3"), ctfv1alpha1.Quantity("3Gi")
	h.Template(t, "large", func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.Resources = &ctfv1alpha1.Resources{Limits: &ctfv1alpha1.ResourceAmounts{CPU: &three, Memory: &threeGi},
			Requests: &ctfv1alpha1.ResourceAmounts{CPU: &three, Memory: &threeGi}}
		s.Policy = &ctfv1alpha1.InstancePolicy{MaxCPU: &three, MaxMemory: &threeGi}
	})
	ch := harness.FromTemplate(h.Namespace(t, nil), "large", "team-q", "large")
	g.Expect(h.Client.Create(ctx, ch)).To(Succeed())
	t.Cleanup(func() { _ = h.Client.Delete(context.Background(), ch) })
	h.EventuallyPhase(t, ch, ctfv1alpha1.PhaseRunning)

	key := client.ObjectKey{Namespace: identity.Namespace(ch), Name: ch.Name}
	quota := &corev1.ResourceQuota{}
	g.Expect(h.Client.Get(ctx, key, quota)).To(Succeed())
	for name, want := range map[corev1.ResourceName]string{"limits.cpu": "6", "limits.memory": "6Gi", "requests.cpu": "6", "requests.memory": "6Gi",
		"pods": "4", "services": "2"} {
		got := quota.Spec.Hard[name]
		g.Expect(got.Cmp(resource.MustParse(want))).To(BeZero(), "%s: %s, want %s", name, got.String(), want)
	}
	dep := &appsv1.Deployment{}
	g.Expect(h.Client.Get(ctx, key, dep)).To(Succeed())
	limits := dep.Spec.Template.Spec.Containers[0].Resources.Limits
	g.Expect(limits.Cpu().Cmp(resource.MustParse("3"))).To(BeZero())
	g.Expect(limits.Memory().Cmp(resource.MustParse("3Gi"))).To(BeZero())
	g.Expect(dep.Status.AvailableReplicas).To(Equal(int32(1)))
}
