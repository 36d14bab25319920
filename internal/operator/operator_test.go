package operator_test

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/identity"
	"github.com/challenge-operator/challenge-operator/test/builders"
	"github.com/challenge-operator/challenge-operator/test/harness"
)

const participantLabel = ctfv1alpha1.ParticipantLabel

func TestChallengeBecomesRunning(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t)
	ch := builders.Challenge(ns, "web", "team-1")
	g.Expect(k8s.Create(ctx, ch)).To(Succeed())
	g.Expect(ch.Status.Phase).To(Equal(ctfv1alpha1.PhaseNone), "a new Challenge says None before any reconcile")

	got := eventuallyPhase(t, ch, ctfv1alpha1.PhaseRunning)
	g.Expect(got.Status.Reason).To(Equal("Ready"))
	g.Expect(got.Status.Endpoint).NotTo(BeNil())
	g.Expect(got.Status.Endpoint.Address).To(Equal("web." + ns + ".svc:8080"))
	g.Expect(got.Status.Endpoint.URL).To(Equal("http://web." + ns + ".svc:8080/"))
	g.Expect(got.Status.StartedAt).NotTo(BeNil())
	g.Expect(got.Status.ReadyAt).NotTo(BeNil())
	g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
	g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, "Ready")).To(BeTrue())
	g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, "Deployed")).To(BeTrue())
	g.Expect(got.Finalizers).To(ContainElement("uninstall-helm-release"))

	key := client.ObjectKey{Namespace: ns, Name: "web"}
	dep := &appsv1.Deployment{}
	g.Expect(k8s.Get(ctx, key, dep)).To(Succeed())
	g.Expect(dep.Status.AvailableReplicas).To(Equal(int32(1)))
	for _, obj := range []client.Object{dep, &corev1.Service{}, &networkingv1.NetworkPolicy{}, &corev1.ServiceAccount{}} {
		g.Expect(k8s.Get(ctx, key, obj)).To(Succeed())
		g.Expect(obj.GetLabels()).To(HaveKeyWithValue(participantLabel, "team-1"), "%T", obj)
		g.Expect(obj.GetLabels()).To(HaveKeyWithValue(ctfv1alpha1.ChallengeLabel, "web"), "%T", obj)
		g.Expect(metaControlledBy(obj, got)).To(BeTrue(), "%T is owned by the Challenge", obj)
	}
	g.Expect(dep.Spec.Template.Labels).To(HaveKeyWithValue(participantLabel, "team-1"))
	g.Expect(dep.Spec.Template.Spec.Containers[0].Image).To(Equal("registry.example/ctf/web-intro:1.0"))
}

func TestSpecValuesOverrideChartDefaults(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t)
	ch := builders.Challenge(ns, "pwn", "team-2")
	ch.Spec.Values = harness.Values(`{
		"podAnnotations": {"category": "pwn"},
		"resources": {"limits": {"memory": "128Mi"}},
		"image": "ignored.example/typed-field-wins:1"
	}`)
	ch.Spec.Env = []ctfv1alpha1.EnvVar{{Name: "MODE", Value: "hard"}}
	g.Expect(k8s.Create(ctx, ch)).To(Succeed())
	eventuallyPhase(t, ch, ctfv1alpha1.PhaseRunning)

	dep := &appsv1.Deployment{}
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(ch), dep)).To(Succeed())
	pod := dep.Spec.Template
	c := pod.Spec.Containers[0]
	g.Expect(pod.Annotations).To(HaveKeyWithValue("category", "pwn"), "spec.values overrides a chart default")
	g.Expect(c.Resources.Limits.Memory().String()).To(Equal("128Mi"), "spec.values overrides a chart default")
	g.Expect(c.Resources.Limits.Cpu().String()).To(Equal("500m"), "chart defaults not overridden remain")
	g.Expect(c.Image).To(Equal(ch.Spec.Image), "typed spec fields win over spec.values")
	g.Expect(pod.Labels).To(HaveKeyWithValue(participantLabel, "team-2"), "the operator's values win over everything")
	g.Expect(c.Env).To(ContainElement(corev1.EnvVar{Name: "MODE", Value: "hard"}))
}

func TestInvalidChallengeIsRefusedAtAdmission(t *testing.T) {
	ns := namespace(t)
	tests := []struct {
		name   string
		mutate func(*ctfv1alpha1.Challenge)
		want   string
	}{
		{"port zero", func(c *ctfv1alpha1.Challenge) { c.Spec.Ports[0].Port = 0 }, "spec.ports[0].port"},
		{"port too large", func(c *ctfv1alpha1.Challenge) { c.Spec.Ports[0].Port = 70000 }, "spec.ports[0].port"},
		{"bad protocol", func(c *ctfv1alpha1.Challenge) { c.Spec.Ports[0].Protocol = "SCTP" }, "spec.ports[0].protocol"},
		{"no ports", func(c *ctfv1alpha1.Challenge) { c.Spec.Ports = nil }, "spec.ports"},
		{"duplicate port names", func(c *ctfv1alpha1.Challenge) {
			c.Spec.Ports = append(c.Spec.Ports, ctfv1alpha1.ChallengePort{Name: "http", Port: 9090})
		}, "spec.ports names must be unique"},
		{"empty image", func(c *ctfv1alpha1.Challenge) { c.Spec.Image = "" }, "spec.image"},
		{"participant not a DNS label", func(c *ctfv1alpha1.Challenge) { c.Spec.Participant = "Team_1" }, "spec.participant"},
		{"an env variable named as the instance's address", func(c *ctfv1alpha1.Challenge) {
			c.Spec.Env = []ctfv1alpha1.EnvVar{{Name: "CHALLENGE_HOST", Value: "victim.ctf.example"}}
		}, "are set by the operator to the instance's and its components' addresses"},
		{"name too long for a release", func(c *ctfv1alpha1.Challenge) { c.Name = strings.Repeat("a", 54) }, "metadata.name must be a DNS label of at most 53"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ch := builders.Challenge(ns, "invalid", "team-1")
			tt.mutate(ch)
			err := k8s.Create(context.Background(), ch)
			g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
			g.Expect(err.Error()).To(ContainSubstring(tt.want))
		})
	}

	t.Run("participant changed", func(t *testing.T) {
		g := NewWithT(t)
		ctx := context.Background()
		ch := builders.Challenge(ns, "immutable", "team-1")
		g.Expect(k8s.Create(ctx, ch)).To(Succeed())
		patch := client.MergeFrom(ch.DeepCopy())
		ch.Spec.Participant = "team-2"
		err := k8s.Patch(ctx, ch, patch)
		g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
		g.Expect(err.Error()).To(ContainSubstring("spec.participant is immutable"))
	})
}

func TestBadValuesGiveErrorAndFixingRecovers(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t)
	ch := builders.Challenge(ns, "broken", "team-3")
	ch.Spec.Values = harness.Values(`{"replicas": 3}`)
	g.Expect(k8s.Create(ctx, ch)).To(Succeed())

	got := eventuallyPhase(t, ch, ctfv1alpha1.PhaseError)
	g.Expect(got.Status.Reason).To(Equal("PolicyViolation"))
	g.Expect(got.Status.Message).To(ContainSubstring("replicas"))
	g.Expect(meta.IsStatusConditionFalse(got.Status.Conditions, "Ready")).To(BeTrue())

	// A patch, not an update: the operator writes status meanwhile.
	patch := client.MergeFrom(got.DeepCopy())
	got.Spec.Values = harness.Values(`{"replicas": 1}`)
	g.Expect(k8s.Patch(ctx, got, patch)).To(Succeed())
	eventuallyPhase(t, ch, ctfv1alpha1.PhaseRunning)
}

func TestDeletionRemovesEveryObject(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t)
	ch := builders.Challenge(ns, "gone", "team-4")
	ch.Spec.Expose = &ctfv1alpha1.Expose{Type: ctfv1alpha1.ExposeIngress}
	g.Expect(k8s.Create(ctx, ch)).To(Succeed())
	running := eventuallyPhase(t, ch, ctfv1alpha1.PhaseRunning)
	g.Expect(running.Status.Endpoint.URL).To(Equal("http://" + identity.Host(ch, harness.IngressDomain) + "/"))

	key := client.ObjectKeyFromObject(ch)
	released := func() []client.Object {
		return []client.Object{&appsv1.Deployment{}, &corev1.Service{}, &networkingv1.NetworkPolicy{},
			&corev1.ServiceAccount{}, &networkingv1.Ingress{}}
	}
	for _, obj := range released() {
		g.Expect(k8s.Get(ctx, key, obj)).To(Succeed(), "%T exists before deletion", obj)
	}
	g.Expect(releaseSecrets(ctx, g, ns, "gone")).NotTo(BeEmpty())

	g.Expect(k8s.Delete(ctx, ch)).To(Succeed())
	h.EventuallyGone(t, ch, timeout, "the finalizer is removed and the Challenge goes")
	for _, obj := range released() {
		g.Eventually(func() bool { return apierrors.IsNotFound(k8s.Get(ctx, key, obj)) }, timeout, interval).
			Should(BeTrue(), "%T is gone", obj)
	}
	g.Expect(releaseSecrets(ctx, g, ns, "gone")).To(BeEmpty(), "the Helm release is gone")
	g.Eventually(func(g Gomega) {
		var pods corev1.PodList
		g.Expect(k8s.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{ctfv1alpha1.AppInstanceLabel: "gone"})).To(Succeed())
		g.Expect(pods.Items).To(BeEmpty())
	}, timeout, interval).Should(Succeed(), "the pods are gone")
}

func releaseSecrets(ctx context.Context, g Gomega, ns, name string) []corev1.Secret {
	var secrets corev1.SecretList
	g.Expect(k8s.List(ctx, &secrets, client.InNamespace(ns), client.MatchingLabels{"owner": "helm", "name": name})).To(Succeed())
	return secrets.Items
}

func metaControlledBy(obj client.Object, owner *ctfv1alpha1.Challenge) bool {
	for _, ref := range obj.GetOwnerReferences() {
		if ref.UID == owner.UID && ref.Controller != nil && *ref.Controller {
			return true
		}
	}
	return false
}

// TestDeletedByHandIsRestored: a rendered object, or the release record,
// deleted by hand comes back within seconds; deleting the Challenge
// afterwards still leaves nothing.
func TestDeletedByHandIsRestored(t *testing.T) {
	for _, what := range []string{"Service", "release record"} {
		t.Run(what, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			ns := namespace(t)
			ch := builders.Challenge(ns, "restored", "team-r")
			g.Expect(k8s.Create(ctx, ch)).To(Succeed())
			eventuallyPhase(t, ch, ctfv1alpha1.PhaseRunning)
			key := client.ObjectKeyFromObject(ch)

			if what == "Service" {
				svc := &corev1.Service{}
				g.Expect(k8s.Get(ctx, key, svc)).To(Succeed())
				g.Expect(k8s.Delete(ctx, svc)).To(Succeed())
				g.Eventually(func(g Gomega) {
					again := &corev1.Service{}
					g.Expect(k8s.Get(ctx, key, again)).To(Succeed())
					g.Expect(again.UID).NotTo(Equal(svc.UID))
				}, timeout, interval).Should(Succeed(), "the Service is restored")
			} else {
				for _, s := range releaseSecrets(ctx, g, ns, "restored") {
					g.Expect(k8s.Delete(ctx, &s)).To(Succeed())
				}
				g.Eventually(func(g Gomega) {
					g.Expect(releaseSecrets(ctx, g, ns, "restored")).NotTo(BeEmpty())
				}, timeout, interval).Should(Succeed(), "the release record is restored")
			}
			eventuallyPhase(t, ch, ctfv1alpha1.PhaseRunning)

			g.Expect(k8s.Delete(ctx, ch)).To(Succeed())
			g.Eventually(func(g Gomega) {
				g.Expect(apierrors.IsNotFound(k8s.Get(ctx, key, &ctfv1alpha1.Challenge{}))).To(BeTrue())
				g.Expect(releaseSecrets(ctx, g, ns, "restored")).To(BeEmpty())
				for _, obj := range []client.Object{&appsv1.Deployment{}, &corev1.Service{}, &networkingv1.NetworkPolicy{}, &corev1.ServiceAccount{}} {
					g.Expect(apierrors.IsNotFound(k8s.Get(ctx, key, obj))).To(BeTrue(), "%T", obj)
				}
			}, timeout, interval).Should(Succeed(), "nothing is left")
		})
	}
}

// TestEditedNetworkPolicyIsRestored: rules added to an instance's
// NetworkPolicy by hand are reverted to the rendered ones. The cache holds
// NetworkPolicies without their rules, so the edit is seen by its generation.
func TestEditedNetworkPolicyIsRestored(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t)
	ch := builders.Challenge(ns, "np-edited", "team-np")
	g.Expect(k8s.Create(ctx, ch)).To(Succeed())
	eventuallyPhase(t, ch, ctfv1alpha1.PhaseRunning)

	var list networkingv1.NetworkPolicyList
	g.Expect(k8s.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{ctfv1alpha1.InstanceLabel: ch.Name})).To(Succeed())
	g.Expect(list.Items).NotTo(BeEmpty())
	np := list.Items[0]
	rendered := np.Spec.DeepCopy()
	np.Spec.Ingress = append(np.Spec.Ingress, networkingv1.NetworkPolicyIngressRule{}) // from anywhere
	g.Expect(k8s.Update(ctx, &np)).To(Succeed())
	g.Eventually(func(g Gomega) {
		again := &networkingv1.NetworkPolicy{}
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(&np), again)).To(Succeed())
		g.Expect(again.Generation).To(BeNumerically(">", np.Generation), "the edit and its repair are new generations")
		g.Expect(again.Spec).To(Equal(*rendered))
	}, timeout, interval).Should(Succeed(), "the rendered rules are back")
}
