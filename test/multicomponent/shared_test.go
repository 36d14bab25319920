package multicomponent_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
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
	ch := harness.FromTemplate(ns, "with-checker", "team-a", "with-checker")
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
	ch := harness.FromTemplate(ns, "with-dns", "team-a", "with-dns")
	g.Expect(h.Client.Create(ctx, ch)).To(Succeed())
	got := h.EventuallyPhase(t, ch, ctfv1alpha1.PhaseError)
	g.Expect(got.Status.Reason).To(Equal("PolicyViolation"))
	g.Expect(got.Status.Message).To(ContainSubstring("names Service kube-system/kube-dns; allowed namespaces (--shared-service-namespaces): " + harness.OrganiserNamespace))

	h.Template(t, "with-later", func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.SharedServices = []ctfv1alpha1.ServiceRef{{Namespace: harness.OrganiserNamespace, Name: "later"}}
	})
	later := harness.FromTemplate(ns, "with-later", "team-a", "with-later")
	g.Expect(h.Client.Create(ctx, later)).To(Succeed())
	got = h.EventuallyPhase(t, later, ctfv1alpha1.PhaseError)
	g.Expect(got.Status.Reason).To(Equal("SharedServiceNotFound"))
	g.Expect(got.Status.Message).To(ContainSubstring("Service " + harness.OrganiserNamespace + "/later"))
	sharedService(t, "later", map[string]string{"app": "later"}, corev1.ServicePort{Name: "http", Port: 80})
	h.EventuallyPhase(t, later, ctfv1alpha1.PhaseRunning)
}
