package webhook_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/identity"
	"github.com/challenge-operator/challenge-operator/internal/values"
	"github.com/challenge-operator/challenge-operator/test/builders"
	"github.com/challenge-operator/challenge-operator/test/harness"
)

func TestWebhookRefusesDuplicateAndOverQuota(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := h.Namespace(t, map[string]string{webhookLabel: "on"})
	h.Template(t, "wh-once", func(s *ctfv1alpha1.ChallengeTemplateSpec) { s.OverridableValues = []ctfv1alpha1.ValuePath{"env"} })

	first := builders.FromTemplate(ns, "first", "team-w", "wh-once")
	g.Expect(h.Client.Create(ctx, first)).To(Succeed())
	h.EventuallyPhase(t, first, ctfv1alpha1.PhaseRunning)

	err := h.Client.Create(ctx, builders.FromTemplate(ns, "dup", "team-w", "wh-once"))
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "got %v", err)
	g.Expect(err.Error()).To(ContainSubstring("QuotaExceeded: participant team-w already has an instance of wh-once"))

	// The operator-wide limit is 2: a second instance (another challenge) is fine, a third is not.
	second := builders.Challenge(ns, "second", "team-w")
	g.Expect(h.Client.Create(ctx, second)).To(Succeed())
	// The webhook counts from the operator's cache: wait until it holds the second.
	h.EventuallyPhase(t, second, ctfv1alpha1.PhaseRunning)
	err = h.Client.Create(ctx, builders.Challenge(ns, "third", "team-w"))
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "got %v", err)
	g.Expect(err.Error()).To(ContainSubstring("the limit is 2"))

	notAllowed := builders.FromTemplate(ns, "values", "team-v", "wh-once")
	notAllowed.Spec.Values = harness.Values(`{"replicas": 5}`)
	err = h.Client.Create(ctx, notAllowed)
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "got %v", err)
	g.Expect(err.Error()).To(ContainSubstring("ValueNotAllowed"))
	g.Expect(err.Error()).To(ContainSubstring("replicas"))

	// A missing template is not refused: the Challenge waits for it.
	g.Expect(h.Client.Create(ctx, builders.FromTemplate(ns, "waits", "team-u", "wh-later"))).To(Succeed())
}

func TestWithoutWebhookTheOperatorRefusesInstead(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := h.Namespace(t, nil)
	h.Template(t, "nowh-once", nil)
	first := builders.FromTemplate(ns, "first", "team-n", "nowh-once")
	g.Expect(h.Client.Create(ctx, first)).To(Succeed())
	h.EventuallyPhase(t, first, ctfv1alpha1.PhaseRunning)

	dup := builders.FromTemplate(ns, "dup", "team-n", "nowh-once")
	g.Expect(h.Client.Create(ctx, dup)).To(Succeed(), "no webhook in this namespace")
	got := h.EventuallyPhase(t, dup, ctfv1alpha1.PhaseError)
	g.Expect(got.Status.Reason).To(Equal("QuotaExceeded"))
	g.Expect(apierrors.IsNotFound(h.Client.Get(ctx, client.ObjectKey{Namespace: identity.Namespace(dup), Name: "dup"}, &corev1.Namespace{}))).
		To(BeTrue(), "nothing installed for the refused instance")
}

func TestNamespacePerInstance(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := h.Namespace(t, nil)
	ch := builders.Challenge(ns, "own", "team-o")
	g.Expect(h.Client.Create(ctx, ch)).To(Succeed())
	got := h.EventuallyPhase(t, ch, ctfv1alpha1.PhaseRunning)

	instanceNS := identity.Namespace(ch)
	g.Expect(got.Status.Endpoint.Host).To(Equal("own." + instanceNS + ".svc"))
	nsObj := &corev1.Namespace{}
	g.Expect(h.Client.Get(ctx, client.ObjectKey{Name: instanceNS}, nsObj)).To(Succeed())
	g.Expect(nsObj.Labels).To(HaveKeyWithValue("pod-security.kubernetes.io/enforce", "restricted"))
	g.Expect(nsObj.Labels).To(HaveKeyWithValue(ctfv1alpha1.ParticipantLabel, "team-o"))
	key := client.ObjectKey{Namespace: instanceNS, Name: "own"}
	quota := &corev1.ResourceQuota{}
	g.Expect(h.Client.Get(ctx, key, quota)).To(Succeed())
	wantQuota, wantLimits, err := values.NamespaceBounds(0)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(apiequality.Semantic.DeepEqual(quota.Spec.Hard, wantQuota)).To(BeTrue(), "the quota is exactly the operator's: %v", quota.Spec.Hard)
	lr := &corev1.LimitRange{}
	g.Expect(h.Client.Get(ctx, key, lr)).To(Succeed())
	g.Expect(apiequality.Semantic.DeepEqual(lr.Spec.Limits, wantLimits)).To(BeTrue(), "the limit range is exactly the operator's: %v", lr.Spec.Limits)
	dep := &appsv1.Deployment{}
	g.Expect(h.Client.Get(ctx, key, dep)).To(Succeed())
	g.Expect(dep.Status.AvailableReplicas).To(Equal(int32(1)))
	g.Expect(dep.Spec.Template.Spec.AutomountServiceAccountToken).To(Equal(ptr.To(false)))

	g.Expect(h.Client.Delete(ctx, ch)).To(Succeed())
	h.EventuallyGone(t, ch, harness.Timeout, "deleted")
	g.Expect(apierrors.IsNotFound(h.Client.Get(ctx, client.ObjectKey{Name: instanceNS}, &corev1.Namespace{}))).
		To(BeTrue(), "the instance's namespace is gone with it")
}

// TestLabelledNamespaceSurvivesTheInstance: labels are no proof. A Namespace
// someone labelled with an instance's labels is not deleted with the
// instance; only the one of the instance's derived name is.
func TestLabelledNamespaceSurvivesTheInstance(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := h.Namespace(t, nil)
	ch := builders.Challenge(ns, "owned", "team-owned")
	g.Expect(h.Client.Create(ctx, ch)).To(Succeed())
	h.EventuallyPhase(t, ch, ctfv1alpha1.PhaseRunning)
	own := &corev1.Namespace{}
	g.Expect(h.Client.Get(ctx, client.ObjectKey{Name: identity.Namespace(ch)}, own)).To(Succeed())
	bystander := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns + "-bystander", Labels: own.Labels}}
	g.Expect(h.Client.Create(ctx, bystander)).To(Succeed())
	t.Cleanup(func() { _ = h.Client.Delete(context.Background(), bystander) })

	g.Expect(h.Client.Delete(ctx, ch)).To(Succeed())
	h.EventuallyGone(t, ch, harness.Timeout, "deleted")
	g.Expect(apierrors.IsNotFound(h.Client.Get(ctx, client.ObjectKeyFromObject(own), &corev1.Namespace{}))).
		To(BeTrue(), "the instance's namespace is gone with it")
	got := &corev1.Namespace{}
	g.Expect(h.Client.Get(ctx, client.ObjectKeyFromObject(bystander), got)).To(Succeed())
	g.Expect(got.DeletionTimestamp).To(BeNil(), "the labelled bystander Namespace is not deleted")
}

func TestWebhookRefusesReservedKeysOnCreateAndUpdate(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := h.Namespace(t, map[string]string{webhookLabel: "on"})

	hostile := builders.Challenge(ns, "dns-peer", "team-k")
	hostile.Spec.Values = harness.Values(`{"podLabels": {"k8s-app": "kube-dns"}}`)
	err := h.Client.Create(ctx, hostile)
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "got %v", err)
	g.Expect(err.Error()).To(ContainSubstring(`PolicyViolation: metadata-key`))
	g.Expect(err.Error()).To(ContainSubstring(`"k8s-app"`))

	ch := builders.Challenge(ns, "later", "team-k")
	g.Expect(h.Client.Create(ctx, ch)).To(Succeed())
	h.EventuallyPhase(t, ch, ctfv1alpha1.PhaseRunning)
	// A patch, not an update: the operator writes status meanwhile.
	patch := client.MergeFrom(ch.DeepCopy())
	ch.Spec.Values = harness.Values(`{"podAnnotations": {"container.apparmor.security.beta.kubernetes.io/challenge": "unconfined"}}`)
	err = h.Client.Patch(ctx, ch, patch)
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "an update is checked as a creation is: got %v", err)
	g.Expect(err.Error()).To(ContainSubstring("apparmor"))

	g.Expect(h.Client.Delete(ctx, ch)).To(Succeed())
	h.EventuallyGone(t, ch, harness.Timeout, "the finalizer's removal is never refused")
}

// TestNothingOrphanedWhenTheNamespaceGoes deletes the namespace of a
// Challenge, and lets another expire: the namespace controller and the
// garbage collector remove the release record while the uninstall runs, and
// yet the instance namespace (cluster-scoped, no owner reference) goes too.
func TestNothingOrphanedWhenTheNamespaceGoes(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := h.Namespace(t, nil)
	ch := builders.Challenge(ns, "inside", "team-z")
	g.Expect(h.Client.Create(ctx, ch)).To(Succeed())
	h.EventuallyPhase(t, ch, ctfv1alpha1.PhaseRunning)
	instanceNS := identity.Namespace(ch)
	g.Expect(h.Client.Get(ctx, client.ObjectKey{Name: instanceNS}, &corev1.Namespace{})).To(Succeed())

	g.Expect(h.Client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	h.EventuallyGone(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: instanceNS}}, 2*harness.Timeout, "the instance namespace is not orphaned")
}

func TestNothingOrphanedWhenAnInstanceExpires(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := h.Namespace(t, nil)
	ch := builders.Challenge(ns, "brief", "team-e")
	ch.Spec.Lifetime = &metav1.Duration{Duration: 6 * time.Second}
	g.Expect(h.Client.Create(ctx, ch)).To(Succeed())
	h.EventuallyPhase(t, ch, ctfv1alpha1.PhaseRunning)
	h.EventuallyGone(t, ch, 2*harness.Timeout, "expired")
	h.EventuallyGone(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: identity.Namespace(ch)}}, 2*harness.Timeout, "the instance namespace is not orphaned")
}

// TestPooledInstancesSkipOnlyTheWebhook: the webhooks leave the checks of
// Challenges with the pool label to the operator (pooled instances are its
// own, and a claim's update of one need not wait on them). A team's Challenge
// wearing the label is refused by the operator instead, with the same
// reason; one that gains it in an update is still refused at admission.
func TestPooledInstancesSkipOnlyTheWebhook(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := h.Namespace(t, map[string]string{webhookLabel: "on"})
	h.Template(t, "wh-pool-label", nil)

	labelled := builders.FromTemplate(ns, "labelled", "team-p", "wh-pool-label")
	labelled.Labels = map[string]string{ctfv1alpha1.PoolLabel: "wh-pool-label"}
	labelled.Spec.Values = harness.Values(`{"replicas": 5}`)
	g.Expect(h.Client.Create(ctx, labelled)).To(Succeed(), "not judged at admission")
	got := h.EventuallyPhase(t, labelled, ctfv1alpha1.PhaseError)
	g.Expect(got.Status.Reason).To(Equal("ValueNotAllowed"))
	g.Expect(got.Finalizers).To(ContainElement(ctfv1alpha1.UninstallFinalizer), "the creation webhook still sets the finalizer")

	plain := builders.FromTemplate(ns, "plain", "team-q", "wh-pool-label")
	g.Expect(h.Client.Create(ctx, plain)).To(Succeed())
	patch := client.MergeFrom(plain.DeepCopy())
	plain.Labels = map[string]string{ctfv1alpha1.PoolLabel: "wh-pool-label"}
	plain.Spec.Values = harness.Values(`{"replicas": 5}`)
	err := h.Client.Patch(ctx, plain, patch)
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "its old object is sent: got %v", err)
	g.Expect(err.Error()).To(ContainSubstring("ValueNotAllowed"))
}
