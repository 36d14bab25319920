package operator_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/test/builders"
	"github.com/challenge-operator/challenge-operator/test/harness"
)

// TestSharedServiceBlinkKeepsTheInstanceRunning: a shared Service deleted
// from under a Running instance, and a renewal that makes the operator
// render it again meanwhile, leave it Running with a condition naming the
// Service; the Service back, the condition goes. An install waits for it.
func TestSharedServiceBlinkKeepsTheInstanceRunning(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	newService := func() *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: harness.OrganiserNamespace, Name: "blinking"},
			Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "blinking"}, Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}}
	}
	svc := newService()
	g.Expect(k8s.Create(ctx, svc)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), newService()) })
	h.Template(t, "tpl-blink", func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.SharedServices = []ctfv1alpha1.ServiceRef{{Namespace: harness.OrganiserNamespace, Name: "blinking"}}
		s.Lifetime = &ctfv1alpha1.LifetimePolicy{Default: &metav1.Duration{Duration: time.Hour}}
	})
	ns := namespace(t)
	ch := builders.FromTemplate(ns, "blink", "team-blink", "tpl-blink")
	g.Expect(k8s.Create(ctx, ch)).To(Succeed())
	got := eventuallyPhase(t, ch, ctfv1alpha1.PhaseRunning)

	g.Expect(k8s.Delete(ctx, svc)).To(Succeed())
	renewNow(t, got)
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(ch), got)).To(Succeed())
		c := apimeta.FindStatusCondition(got.Status.Conditions, "SharedServicesAvailable")
		g.Expect(c).NotTo(BeNil(), "phase %s: %s", got.Status.Phase, got.Status.Message)
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Reason).To(Equal("SharedServiceNotFound"))
		g.Expect(c.Message).To(ContainSubstring("blinking"))
	}, timeout, interval).Should(Succeed())
	g.Expect(got.Status.Phase).To(Equal(ctfv1alpha1.PhaseRunning), "%s: %s", got.Status.Reason, got.Status.Message)
	g.Expect(got.Status.Renewals).To(Equal(int32(1)), "the renewal counts")

	// An install waits for the Service.
	fresh := builders.FromTemplate(ns, "blink-fresh", "team-blink-2", "tpl-blink")
	g.Expect(k8s.Create(ctx, fresh)).To(Succeed())
	g.Expect(eventuallyPhase(t, fresh, ctfv1alpha1.PhaseError).Status.Reason).To(Equal("SharedServiceNotFound"))

	g.Expect(k8s.Create(ctx, newService())).To(Succeed())
	eventuallyPhase(t, fresh, ctfv1alpha1.PhaseRunning)
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(ch), got)).To(Succeed())
		g.Expect(apimeta.FindStatusCondition(got.Status.Conditions, "SharedServicesAvailable")).To(BeNil())
		g.Expect(got.Status.Phase).To(Equal(ctfv1alpha1.PhaseRunning))
	}, timeout, interval).Should(Succeed())
}
