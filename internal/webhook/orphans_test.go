package webhook_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/identity"
	"github.com/challenge-operator/challenge-operator/test/builders"
	"github.com/challenge-operator/challenge-operator/test/harness"
)

// TestNamespaceOfAChallengeGoneWithoutItsUninstallIsDeleted: whoever may
// patch a Challenge (the platform, whose role patches to renew; an admin
// clearing a stuck deletion) can take its finalizer off and delete it; its
// namespace of its own, owned by nothing, once ran on for good with the
// instance's pods, outside expiry, quota, budget and --max-instances. The
// operator deletes it.
func TestNamespaceOfAChallengeGoneWithoutItsUninstallIsDeleted(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ch := builders.Challenge(h.Namespace(t, nil), "unfinalized", "team-unfinalized")
	g.Expect(h.Client.Create(ctx, ch)).To(Succeed())
	h.EventuallyPhase(t, ch, ctfv1alpha1.PhaseRunning)
	own := identity.Namespace(ch)
	g.Expect(h.Client.Get(ctx, client.ObjectKey{Name: own}, &corev1.Namespace{})).To(Succeed())

	// The finalizer off, then deleted at that very version: the
	// Challenge is gone at once, before any uninstall.
	g.Eventually(func(g Gomega) {
		cur := &ctfv1alpha1.Challenge{}
		err := h.Client.Get(ctx, client.ObjectKeyFromObject(ch), cur)
		if apierrors.IsNotFound(err) {
			return
		}
		g.Expect(err).NotTo(HaveOccurred())
		cur.Finalizers = nil
		g.Expect(h.Client.Update(ctx, cur)).To(Succeed())
		g.Expect(h.Client.Delete(ctx, cur, client.Preconditions{ResourceVersion: &cur.ResourceVersion})).To(Succeed())
	}, harness.Timeout, harness.Interval).Should(Succeed())
	g.Expect(apierrors.IsNotFound(h.Client.Get(ctx, client.ObjectKeyFromObject(ch), &ctfv1alpha1.Challenge{}))).To(BeTrue(), "gone without its uninstall")

	g.Eventually(func(g Gomega) {
		ns := &corev1.Namespace{}
		err := h.Client.Get(ctx, client.ObjectKey{Name: own}, ns)
		if apierrors.IsNotFound(err) {
			return
		}
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(ns.DeletionTimestamp).NotTo(BeNil(), "namespace %s is being deleted", own)
	}, harness.Timeout, harness.Interval).Should(Succeed())
}

// TestANamespaceOfALiveChallengeStays: an instance's namespace whose
// Challenge is there stays, however the sweep is woken (here, by a label
// of the namespace's changing).
func TestANamespaceOfALiveChallengeStays(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ch := builders.Challenge(h.Namespace(t, nil), "kept", "team-kept")
	g.Expect(h.Client.Create(ctx, ch)).To(Succeed())
	t.Cleanup(func() { _ = h.Client.Delete(context.Background(), ch) })
	h.EventuallyPhase(t, ch, ctfv1alpha1.PhaseRunning)
	own := &corev1.Namespace{}
	g.Expect(h.Client.Get(ctx, client.ObjectKey{Name: identity.Namespace(ch)}, own)).To(Succeed())
	patch := client.MergeFrom(own.DeepCopy())
	own.Labels["touched"] = "yes"
	g.Expect(h.Client.Patch(ctx, own, patch)).To(Succeed())
	g.Consistently(func(g Gomega) {
		ns := &corev1.Namespace{}
		g.Expect(h.Client.Get(ctx, client.ObjectKey{Name: identity.Namespace(ch)}, ns)).To(Succeed())
		g.Expect(ns.DeletionTimestamp).To(BeNil())
	}, "3s", harness.Interval).Should(Succeed())
	h.EventuallyPhase(t, ch, ctfv1alpha1.PhaseRunning)
}
