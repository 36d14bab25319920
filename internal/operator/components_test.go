package operator_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/test/builders"
)

// TestComponentLifecycle: an instance of two components goes None, Pending,
// Running without gaps; when its redis cannot pull its image the instance is
// Error naming the component, and Running again once it can; once deleted it
// is Deleted until every object of every component is gone.
func TestComponentLifecycle(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	h.Template(t, "pair", func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.Components = []ctfv1alpha1.Component{{Name: "redis", Image: "registry.example/ctf/redis:7",
			Ports: []ctfv1alpha1.ChallengePort{{Name: "redis", Port: 6379, Protocol: ctfv1alpha1.ProtocolTCP}}}}
	})
	ns := namespace(t)
	rec := record(t, ns, "pair")
	ch := builders.FromTemplate(ns, "pair", "team-pair", "pair")
	g.Expect(k8s.Create(ctx, ch)).To(Succeed())
	eventuallyPhase(t, ch, ctfv1alpha1.PhaseRunning)
	g.Eventually(rec.phases, timeout, interval).Should(Equal(
		[]ctfv1alpha1.Phase{ctfv1alpha1.PhaseNone, ctfv1alpha1.PhasePending, ctfv1alpha1.PhaseRunning}))

	// KWOK runs no images: simulate the kubelet's report of a failed pull.
	var pods corev1.PodList
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{ctfv1alpha1.ComponentLabel: "redis"})).To(Succeed())
		g.Expect(pods.Items).To(HaveLen(1))
		g.Expect(pods.Items[0].Status.ContainerStatuses).NotTo(BeEmpty())
	}, timeout, interval).Should(Succeed())
	pod := &pods.Items[0]
	running := pod.Status.DeepCopy()
	pod.Status.ContainerStatuses[0].Ready = false
	pod.Status.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
		Reason: "ImagePullBackOff", Message: `Back-off pulling image "registry.example/ctf/redis:7"`}}
	setPodCondition(&pod.Status, corev1.PodReady, corev1.ConditionFalse)
	setPodCondition(&pod.Status, corev1.ContainersReady, corev1.ConditionFalse)
	g.Expect(k8s.Status().Update(ctx, pod)).To(Succeed())
	got := eventuallyPhase(t, ch, ctfv1alpha1.PhaseError)
	g.Expect(got.Status.Reason).To(Equal("ImagePullBackOff"))
	g.Expect(got.Status.Message).To(HavePrefix("component redis: pod " + pod.Name + ": Back-off pulling image"))
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(pod), pod)).To(Succeed())
	pod.Status = *running
	g.Expect(k8s.Status().Update(ctx, pod)).To(Succeed())
	eventuallyPhase(t, ch, ctfv1alpha1.PhaseRunning)

	g.Expect(k8s.Delete(ctx, ch)).To(Succeed())
	g.Eventually(func() bool { _, deleted := rec.seen(); return deleted }, timeout, interval).Should(BeTrue())
	// The moment the Challenge is gone, everything every component ran is gone too.
	for _, list := range []client.ObjectList{&appsv1.DeploymentList{}, &appsv1.ReplicaSetList{}, &corev1.PodList{}, &corev1.ServiceList{},
		&networkingv1.NetworkPolicyList{}} {
		g.Expect(k8s.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{ctfv1alpha1.InstanceLabel: "pair"})).To(Succeed())
		g.Expect(meta.LenList(list)).To(BeZero(), "%T", list)
	}
	statuses, _ := rec.seen()
	for _, st := range statuses {
		g.Expect(st.Phase).NotTo(BeEmpty(), "the phase is never missing")
	}
	phases := rec.phases()
	g.Expect(phases[len(phases)-1]).To(Equal(ctfv1alpha1.PhaseDeleted), "seen: %v", phases)
}
