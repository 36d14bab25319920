package operator_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/test/builders"
	"github.com/challenge-operator/challenge-operator/test/harness"
)

// TestFailuresAheadFreeTheirPlace: with room for one instance, the queue
// holds one Challenge whose install the post-render gate refuses, then a
// valid one, and one whose value its template refuses never takes a place.
// The organiser makes room for a second instance: the first in the queue is
// admitted and fails, and the valid one behind it is installed at once, with
// no instance leaving (which alone woke the queue).
func TestFailuresAheadFreeTheirPlace(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t)
	tmpl := h.Template(t, "q-fail", func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.MaxInstances = ptr.To[int32](1)
		s.OverridableValues = []ctfv1alpha1.ValuePath{"resources"}
	})
	running := builders.FromTemplate(ns, "running", "team-qf-0", tmpl.Name)
	g.Expect(k8s.Create(ctx, running)).To(Succeed())
	eventuallyPhase(t, running, ctfv1alpha1.PhaseRunning)

	// Above the admin's CPU ceiling: allowed by the template, refused by the gate at install.
	gated := builders.FromTemplate(ns, "a-gated", "team-qf-1", tmpl.Name)
	gated.Spec.Resources = &ctfv1alpha1.Resources{Limits: &ctfv1alpha1.ResourceAmounts{CPU: q("4")}}
	g.Expect(k8s.Create(ctx, gated)).To(Succeed())
	eventuallyPhase(t, gated, ctfv1alpha1.PhaseQueued)
	refused := builders.FromTemplate(ns, "b-refused", "team-qf-2", tmpl.Name)
	refused.Spec.Env = []ctfv1alpha1.EnvVar{{Name: "LEVEL", Value: "9"}}
	g.Expect(k8s.Create(ctx, refused)).To(Succeed())
	g.Expect(eventuallyPhase(t, refused, ctfv1alpha1.PhaseError).Status.Reason).To(Equal("ValueNotAllowed"), "refused at once, not queued")
	valid := builders.FromTemplate(ns, "c-valid", "team-qf-3", tmpl.Name)
	g.Expect(k8s.Create(ctx, valid)).To(Succeed())
	g.Expect(*eventuallyPhase(t, valid, ctfv1alpha1.PhaseQueued).Status.QueuePosition).To(BeEquivalentTo(2), "behind the gated one only")

	g.Expect(harness.EditTemplate(ctx, k8s, tmpl, func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.MaxInstances = ptr.To[int32](2)
	})).To(Succeed())
	failed := eventuallyPhase(t, gated, ctfv1alpha1.PhaseError)
	g.Expect(failed.Status.Reason).To(Equal("PolicyViolation"), failed.Status.Message)
	failedAt := time.Now()
	got := &ctfv1alpha1.Challenge{}
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(valid), got)).To(Succeed())
		g.Expect(got.Status.Phase).NotTo(Equal(ctfv1alpha1.PhaseQueued), "position %d", ptr.Deref(got.Status.QueuePosition, 0))
	}, 10*time.Second, interval).Should(Succeed(), "admitted once the failure ahead freed its place")
	t.Logf("admitted %s after the failure ahead was seen", time.Since(failedAt).Round(10*time.Millisecond))
	eventuallyPhase(t, valid, ctfv1alpha1.PhaseRunning)
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(running), got)).To(Succeed())
	g.Expect(got.DeletionTimestamp.IsZero()).To(BeTrue(), "nothing left")
}
