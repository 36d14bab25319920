package operator_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/test/harness"
)

// TestTemplateConditions (issue 33): a template beyond the cluster admin's
// bounds says so on itself, Accepted=False with the reason naming the
// flag, and kstatus reads it as Failed; brought within them, it is
// Accepted and Ready for its new generation, and Current.
func TestTemplateConditions(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	tmpl := h.Template(t, "beyond-bounds", func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.Security = &ctfv1alpha1.Security{Profile: ctfv1alpha1.ProfilePrivileged, RuntimeClassName: "gvisor"}
	})
	kstatusOf := func(g Gomega, tmpl *ctfv1alpha1.ChallengeTemplate) kstatus.Status {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(tmpl)
		g.Expect(err).NotTo(HaveOccurred())
		u := &unstructured.Unstructured{Object: m}
		u.SetGroupVersionKind(ctfv1alpha1.GroupVersion.WithKind("ChallengeTemplate"))
		res, err := kstatus.Compute(u)
		g.Expect(err).NotTo(HaveOccurred())
		return res.Status
	}
	got := &ctfv1alpha1.ChallengeTemplate{}
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(tmpl), got)).To(Succeed())
		g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
		accepted := apimeta.FindStatusCondition(got.Status.Conditions, "Accepted")
		g.Expect(accepted).NotTo(BeNil())
		g.Expect(accepted.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(accepted.Reason).To(Equal("PolicyViolation"))
		g.Expect(accepted.Message).To(ContainSubstring("--max-pod-security"), "the flag that would allow it")
		g.Expect(accepted.ObservedGeneration).To(Equal(got.Generation))
		g.Expect(apimeta.IsStatusConditionFalse(got.Status.Conditions, "Ready")).To(BeTrue())
		g.Expect(kstatusOf(g, got)).To(Equal(kstatus.FailedStatus))
	}, timeout, interval).Should(Succeed())

	g.Expect(harness.EditTemplate(ctx, k8s, tmpl.DeepCopy(), func(s *ctfv1alpha1.ChallengeTemplateSpec) { s.Security = nil })).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(tmpl), got)).To(Succeed())
		g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
		g.Expect(apimeta.IsStatusConditionTrue(got.Status.Conditions, "Accepted")).To(BeTrue())
		g.Expect(apimeta.IsStatusConditionTrue(got.Status.Conditions, "Ready")).To(BeTrue())
		g.Expect(apimeta.FindStatusCondition(got.Status.Conditions, "Stalled")).To(BeNil())
		g.Expect(kstatusOf(g, got)).To(Equal(kstatus.CurrentStatus))
	}, timeout, interval).Should(Succeed())
}
