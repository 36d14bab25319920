package webhook_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/identity"
	"github.com/challenge-operator/challenge-operator/test/builders"
)

// TestNamespaceQuotaFromTemplate: a template whose container asks 3 CPU and
// 3Gi (beyond the fixed per-workload quota of 2 CPU and 2Gi) runs in a
// namespace of its own: the quota is computed from the template, room for
// its pod and the one a rolling update starts beside it, twice (the next
// update's beside an interrupted one's, still terminating); the quota
// admits the pod the API server would otherwise have refused.
func TestNamespaceQuotaFromTemplate(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	three, threeGi := ctfv1alpha1.Quantity("3"), ctfv1alpha1.Quantity("3Gi")
	h.Template(t, "large", func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.Resources = &ctfv1alpha1.Resources{Limits: &ctfv1alpha1.ResourceAmounts{CPU: &three, Memory: &threeGi},
			Requests: &ctfv1alpha1.ResourceAmounts{CPU: &three, Memory: &threeGi}}
		s.Policy = &ctfv1alpha1.InstancePolicy{MaxCPU: &three, MaxMemory: &threeGi}
	})
	ch := builders.FromTemplate(h.Namespace(t, nil), "large", "team-q", "large")
	g.Expect(h.Client.Create(ctx, ch)).To(Succeed())
	t.Cleanup(func() { _ = h.Client.Delete(context.Background(), ch) })
	h.EventuallyPhase(t, ch, ctfv1alpha1.PhaseRunning)

	key := client.ObjectKey{Namespace: identity.Namespace(ch), Name: ch.Name}
	quota := &corev1.ResourceQuota{}
	g.Expect(h.Client.Get(ctx, key, quota)).To(Succeed())
	for name, want := range map[corev1.ResourceName]string{"limits.cpu": "12", "limits.memory": "12Gi", "requests.cpu": "12", "requests.memory": "12Gi",
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

// TestWebhookRefusesOverBudget: a team running 2 CPU of its 3.5 CPU budget
// is refused a second instance of 2 CPU at admission, in the words the
// operator itself gives without the webhook (Error/BudgetExceeded, nothing
// installed); another team is not.
func TestWebhookRefusesOverBudget(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	two := ctfv1alpha1.Quantity("2")
	heavy := func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.Resources = &ctfv1alpha1.Resources{Requests: &ctfv1alpha1.ResourceAmounts{CPU: &two}, Limits: &ctfv1alpha1.ResourceAmounts{CPU: &two}}
	}
	h.Template(t, "wh-heavy-a", heavy)
	h.Template(t, "wh-heavy-b", heavy)
	hooked := h.Namespace(t, map[string]string{webhookLabel: "on"})
	first := builders.FromTemplate(hooked, "first", "team-heavy", "wh-heavy-a")
	g.Expect(h.Client.Create(ctx, first)).To(Succeed())
	h.EventuallyPhase(t, first, ctfv1alpha1.PhaseRunning)

	want := "BudgetExceeded: participant team-heavy's budget is cpu 3500m (the operator's --team-budget-cpu and --team-budget-memory); " +
		"its instances request cpu 2 and this one needs cpu 2"
	err := h.Client.Create(ctx, builders.FromTemplate(hooked, "second", "team-heavy", "wh-heavy-b"))
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "got %v", err)
	g.Expect(err.Error()).To(HaveSuffix(want))

	plain := h.Namespace(t, nil)
	second := builders.FromTemplate(plain, "second", "team-heavy", "wh-heavy-b")
	g.Expect(h.Client.Create(ctx, second)).To(Succeed(), "no webhook in this namespace")
	got := h.EventuallyPhase(t, second, ctfv1alpha1.PhaseError)
	g.Expect(got.Status.Reason+": "+got.Status.Message).To(Equal(want), "the operator's words")
	g.Expect(apierrors.IsNotFound(h.Client.Get(ctx, client.ObjectKey{Name: identity.Namespace(second)}, &corev1.Namespace{}))).
		To(BeTrue(), "nothing installed for the refused instance")

	other := builders.FromTemplate(hooked, "other", "team-light", "wh-heavy-b")
	g.Expect(h.Client.Create(ctx, other)).To(Succeed(), "another team's budget")
	h.EventuallyPhase(t, other, ctfv1alpha1.PhaseRunning)
}
