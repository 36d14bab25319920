package multicomponent_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/identity"
	"github.com/challenge-operator/challenge-operator/test/builders"
	"github.com/challenge-operator/challenge-operator/test/harness"
)

// sharedService creates a Service of the organiser's, deleted when the test ends.
func sharedService(t *testing.T, name string, selector map[string]string, ports ...corev1.ServicePort) {
	t.Helper()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: harness.OrganiserNamespace, Name: name},
		Spec: corev1.ServiceSpec{Selector: selector, Ports: ports}}
	NewWithT(t).Expect(h.Client.Create(context.Background(), svc)).To(Succeed())
	t.Cleanup(func() { _ = h.Client.Delete(context.Background(), svc) })
}

// TestInstanceReachesASharedService: an instance whose template names the
// organiser's checker Service may reach that Service's pods on its ports,
// and nothing else: its egress is DNS and the checker, exactly.
func TestInstanceReachesASharedService(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	selector := map[string]string{"app": "checker"}
	sharedService(t, "checker", selector,
		corev1.ServicePort{Name: "http", Port: 80, TargetPort: intstr.FromString("http")},
		corev1.ServicePort{Name: "grpc", Port: 9000})
	h.Template(t, "with-checker", func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.SharedServices = []ctfv1alpha1.ServiceRef{{Namespace: harness.OrganiserNamespace, Name: "checker"}}
	})
	ns := h.Namespace(t, nil)
	ch := builders.FromTemplate(ns, "with-checker", "team-a", "with-checker")
	g.Expect(h.Client.Create(ctx, ch)).To(Succeed())
	h.EventuallyPhase(t, ch, ctfv1alpha1.PhaseRunning)

	tcp := ptr.To(corev1.ProtocolTCP)
	g.Expect(networkPolicy(g, ch, ch.Name).Spec.Egress).To(Equal([]networkingv1.NetworkPolicyEgressRule{
		{
			Ports: []networkingv1.NetworkPolicyPort{{Port: ptr.To(intstr.FromInt32(53)), Protocol: ptr.To(corev1.ProtocolUDP)}, {Port: ptr.To(intstr.FromInt32(53)), Protocol: tcp}},
			To: []networkingv1.NetworkPolicyPeer{{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "kube-system"}},
				PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"k8s-app": "kube-dns"}},
			}},
		},
		{
			To: []networkingv1.NetworkPolicyPeer{{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": harness.OrganiserNamespace}},
				PodSelector:       &metav1.LabelSelector{MatchLabels: selector},
			}},
			Ports: []networkingv1.NetworkPolicyPort{{Port: ptr.To(intstr.FromString("http")), Protocol: tcp}, {Port: ptr.To(intstr.FromInt32(9000)), Protocol: tcp}},
		},
	}), "DNS and the checker's pods on its ports, nothing else")
}

// TestSharedServiceRefusals: a Service outside --shared-service-namespaces is
// a PolicyViolation; one that does not exist yet is an Error naming it,
// until the organiser creates it.
func TestSharedServiceRefusals(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	h.Template(t, "with-dns", func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.SharedServices = []ctfv1alpha1.ServiceRef{{Namespace: "kube-system", Name: "kube-dns"}}
	})
	ns := h.Namespace(t, nil)
	ch := builders.FromTemplate(ns, "with-dns", "team-a", "with-dns")
	g.Expect(h.Client.Create(ctx, ch)).To(Succeed())
	got := h.EventuallyPhase(t, ch, ctfv1alpha1.PhaseError)
	g.Expect(got.Status.Reason).To(Equal("PolicyViolation"))
	g.Expect(got.Status.Message).To(ContainSubstring("names Service kube-system/kube-dns; allowed namespaces (--shared-service-namespaces): " + harness.OrganiserNamespace))

	h.Template(t, "with-later", func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.SharedServices = []ctfv1alpha1.ServiceRef{{Namespace: harness.OrganiserNamespace, Name: "later"}}
	})
	later := builders.FromTemplate(ns, "with-later", "team-a", "with-later")
	g.Expect(h.Client.Create(ctx, later)).To(Succeed())
	got = h.EventuallyPhase(t, later, ctfv1alpha1.PhaseError)
	g.Expect(got.Status.Reason).To(Equal("SharedServiceNotFound"))
	g.Expect(got.Status.Message).To(ContainSubstring("Service " + harness.OrganiserNamespace + "/later"))
	sharedService(t, "later", map[string]string{"app": "later"}, corev1.ServicePort{Name: "http", Port: 80})
	h.EventuallyPhase(t, later, ctfv1alpha1.PhaseRunning)
}

// TestSharedInstance: a shared template's one instance, the organiser's,
// never expires though the template gives teams' instances a lifetime; a
// second waits, Queued, while it runs; its NetworkPolicy admits every
// instance's pods on its ports, and two teams' instances of another
// template reach it as a shared Service.
func TestSharedInstance(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	h.Template(t, "admin-bot", func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.Sharing = ctfv1alpha1.SharingShared
		s.Ports = []ctfv1alpha1.ChallengePort{{Name: "http", Port: 8080}}
		s.Lifetime = &ctfv1alpha1.LifetimePolicy{Default: &metav1.Duration{Duration: 10 * time.Minute}}
	})
	bot := builders.FromTemplate(harness.OrganiserNamespace, "admin-bot", "organisers", "admin-bot")
	g.Expect(h.Client.Create(ctx, bot)).To(Succeed())
	t.Cleanup(func() { _ = h.Client.Delete(context.Background(), bot) })
	running := h.EventuallyPhase(t, bot, ctfv1alpha1.PhaseRunning)
	g.Expect(running.Status.ExpiresAt).To(BeNil(), "the organiser's shared instance never expires")

	second := builders.FromTemplate(harness.OrganiserNamespace, "admin-bot-2", "organisers-b", "admin-bot")
	g.Expect(h.Client.Create(ctx, second)).To(Succeed())
	t.Cleanup(func() { _ = h.Client.Delete(context.Background(), second) })
	queued := h.EventuallyPhase(t, second, ctfv1alpha1.PhaseQueued)
	g.Expect(queued.Status.Message).To(ContainSubstring("shared, one instance for every team"))

	g.Expect(networkPolicy(g, running, bot.Name).Spec.Ingress).To(ContainElement(networkingv1.NetworkPolicyIngressRule{
		Ports: []networkingv1.NetworkPolicyPort{{Port: ptr.To(intstr.FromInt32(8080)), Protocol: ptr.To(corev1.ProtocolTCP)}},
		From: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{},
			PodSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: ctfv1alpha1.InstanceLabel, Operator: metav1.LabelSelectorOpExists}}}}},
	}), "every team's instances reach it")

	h.Template(t, "calls-bot", func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.SharedServices = []ctfv1alpha1.ServiceRef{{Namespace: harness.OrganiserNamespace, Name: bot.Name}}
	})
	ns := h.Namespace(t, nil)
	for _, team := range []string{"team-a", "team-b"} {
		ch := builders.FromTemplate(ns, "calls-bot-"+team, team, "calls-bot")
		g.Expect(h.Client.Create(ctx, ch)).To(Succeed())
		got := h.EventuallyPhase(t, ch, ctfv1alpha1.PhaseRunning)
		g.Expect(networkPolicy(g, got, ch.Name).Spec.Egress).To(ContainElement(HaveField("To", ContainElement(networkingv1.NetworkPolicyPeer{
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": harness.OrganiserNamespace}},
			PodSelector:       &metav1.LabelSelector{MatchLabels: identity.Selector(bot)},
		}))), "team %s's instance reaches the shared one's pods", team)
	}
}
