package faults_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/identity"
	"github.com/challenge-operator/challenge-operator/test/builders"
	"github.com/challenge-operator/challenge-operator/test/harness"
)

// TestQuotaChargedForACreateNeverStored: the API server charges a quota
// when it admits a create, before storing the object, and gives nothing
// back when the create then fails, as every create of an operator killed
// mid-install does. Here a create refused as a duplicate charges the
// instance's quota for a Service that does not exist, as the kill did in
// TestOperatorKilledMidBurst; the instance's next upgrade needs one more
// Service, and the quota controller would not count again before its full
// resync (24 h here, 5 min by default). The operator replaces the quota, a
// new one is counted at once, and the upgrade goes through.
func TestQuotaChargedForACreateNeverStored(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ch, tmpl := runningInstance(t, "charged")
	ns := ch.Namespace

	own := identity.Namespace(ch)
	quotaKey := client.ObjectKey{Namespace: own, Name: ch.Name}
	servicesCharged := func(g Gomega) int64 {
		quota := &corev1.ResourceQuota{}
		g.Expect(k8s.Get(ctx, quotaKey, quota)).To(Succeed())
		used := quota.Status.Used[corev1.ResourceServices]
		return used.Value()
	}
	g.Eventually(servicesCharged, within(1), interval).Should(BeEquivalentTo(1))
	hard := &corev1.ResourceQuota{}
	g.Expect(k8s.Get(ctx, quotaKey, hard)).To(Succeed())
	limit := hard.Spec.Hard[corev1.ResourceServices]
	g.Expect(limit.Value()).To(BeEquivalentTo(2), "the quota leaves room for one more Service")

	// A create the API server charges the quota for, then refuses.
	service := &corev1.Service{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: own, Name: ch.Name}, service)).To(Succeed())
	duplicate := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: own, Name: service.Name},
		Spec: corev1.ServiceSpec{Ports: service.Spec.Ports, Selector: service.Spec.Selector}}
	g.Expect(apierrors.IsAlreadyExists(k8s.Create(ctx, duplicate))).To(BeTrue(), "the duplicate is refused after admission")
	g.Eventually(servicesCharged, within(1), interval).Should(BeEquivalentTo(2), "the quota is charged for a Service never stored")

	needOneMoreService(g, tmpl)
	g.Eventually(func() error {
		return k8s.Get(ctx, client.ObjectKey{Namespace: own, Name: identity.BareNamesService(ch.Name)}, &corev1.Service{})
	}, 60*time.Second, interval).Should(Succeed(), "the upgrade created the bare names' Service")
	eventuallyAllRunning(t, ns, 1, within(1))
	g.Eventually(servicesCharged, within(1), interval).Should(BeEquivalentTo(2), "the quota counts the two Services there are")
	replaced := &corev1.ResourceQuota{}
	g.Expect(k8s.Get(ctx, quotaKey, replaced)).To(Succeed())
	g.Expect(replaced.Spec).To(Equal(hard.Spec), "the quota bounds what it bounded")
	g.Expect(replaced.Labels).To(Equal(hard.Labels))
	g.Expect(replaced.Annotations).To(Equal(hard.Annotations))
	g.Eventually(func(g Gomega) []string {
		var events eventsv1.EventList
		g.Expect(k8s.List(ctx, &events, client.InNamespace(ns))).To(Succeed())
		var reasons []string
		for _, e := range events.Items {
			if e.Regarding.Kind == "Challenge" && e.Regarding.Name == ch.Name {
				reasons = append(reasons, e.Reason)
			}
		}
		return reasons
	}, within(1), interval).Should(ContainElement("QuotaRecounted"), "the Challenge's Events say why its quota was replaced")

	deleteAllAndCheck(t, ns, within(1))
}

// TestUpgradeRefusedByAFullQuotaBacksOff: a quota that is full, truly,
// refuses every upgrade of the instance. The quota is left as it is, and the
// upgrade is retried with the reconciler's backoff, not at once: each
// failed upgrade writes a release record, and Helm deletes the oldest
// beyond the history kept, a deletion that must not start the next one.
func TestUpgradeRefusedByAFullQuotaBacksOff(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ch, tmpl := runningInstance(t, "full")
	ns := ch.Namespace

	// The cluster's admin fills the quota with a Service of their own.
	own := identity.Namespace(ch)
	service := &corev1.Service{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: own, Name: ch.Name}, service)).To(Succeed())
	squatter := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: own, Name: "admins"},
		Spec: corev1.ServiceSpec{Ports: service.Spec.Ports}}
	g.Expect(k8s.Create(ctx, squatter)).To(Succeed())
	quota := &corev1.ResourceQuota{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: own, Name: ch.Name}, quota)).To(Succeed())

	needOneMoreService(g, tmpl)
	// Past the history kept, every failed upgrade deletes the oldest record.
	g.Eventually(func() int { return lastRecord(ctx, ns, ch.Name) }, within(1), interval).Should(BeNumerically(">", 10))
	from := lastRecord(ctx, ns, ch.Name)
	g.Consistently(func() int { return lastRecord(ctx, ns, ch.Name) }, 10*time.Second, interval).
		Should(BeNumerically("<=", from+2), "upgrades retried with backoff, not at once")

	got := &ctfv1alpha1.Challenge{}
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(ch), got)).To(Succeed())
	g.Expect(got.Status.Phase).To(Equal(ctfv1alpha1.PhaseError))
	g.Expect(got.Status.Message).To(ContainSubstring("exceeded quota"))
	now := &corev1.ResourceQuota{}
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(quota), now)).To(Succeed())
	g.Expect(now.UID).To(Equal(quota.UID), "a quota that counts what there is stays")

	deleteAllAndCheck(t, ns, within(1))
}

// runningInstance starts an operator and returns a Running instance of a
// template of one component, its namespace and template named name, the
// template changed by mutate (none, or any); the template goes when the
// test ends.
func runningInstance(t *testing.T, name string, mutate ...func(*ctfv1alpha1.ChallengeTemplateSpec)) (*ctfv1alpha1.Challenge, *ctfv1alpha1.ChallengeTemplate) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t, name)
	startOperator(t, name, "--leader-elect=false")
	tmpl := builders.Template(name, append([]builders.TemplateEdit{web}, mutate...)...)
	g.Expect(k8s.Create(ctx, tmpl)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), tmpl) })
	ch := builders.FromTemplate(ns, "c-0000", "team-0000", tmpl.Name)
	g.Expect(k8s.Create(ctx, ch)).To(Succeed())
	eventuallyAllRunning(t, ns, 1, within(1))
	return ch, tmpl
}

// needOneMoreService makes tmpl's instances need one more Service, the bare
// names' headless one: their upgrade creates it.
func needOneMoreService(g Gomega, tmpl *ctfv1alpha1.ChallengeTemplate) {
	g.Expect(harness.EditTemplate(context.Background(), k8s, tmpl, func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.BareNames = &ctfv1alpha1.BareNames{Primary: "web"}
	})).To(Succeed())
}

// lastRecord is the latest version of release name's records in ns, 0 for none.
func lastRecord(ctx context.Context, ns, name string) int {
	records := &corev1.SecretList{}
	if err := k8s.List(ctx, records, client.InNamespace(ns), client.MatchingLabels{"owner": "helm", "name": name}); err != nil {
		return 0
	}
	last := 0
	for _, r := range records.Items {
		if v, err := strconv.Atoi(r.Labels["version"]); err == nil {
			last = max(last, v)
		}
	}
	return last
}

// TestInterruptedRolloutLeavesRoomForTheNextUpgrade: the quota counts a
// terminating pod until its kubelet has removed it (or twice its grace
// period), and an upgrade interrupted mid-rollout leaves that rollout's
// pods terminating while the next one starts. Here the pod such a rollout
// left is still shutting down on a node whose kubelet takes its time (one
// that has none, so it stays counted for the test's length) when the
// instance's template changes: the quota admits the new rollout's pod
// beside it, and the instance is Running on the new image. Before, the
// quota had room for one rollout only, and the ReplicaSet's pod was refused
// ("exceeded quota") until the old pod was gone.
func TestInterruptedRolloutLeavesRoomForTheNextUpgrade(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ch, tmpl := runningInstance(t, "rollout", func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.Resources = &ctfv1alpha1.Resources{Limits: &ctfv1alpha1.ResourceAmounts{CPU: quantityOf("1")}}
	})
	ns, own := ch.Namespace, identity.Namespace(ch)

	// A node whose kubelet never finishes a pod's shutdown; nothing is scheduled there.
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "kubelet-slow"}, Spec: corev1.NodeSpec{Unschedulable: true,
		Taints: []corev1.Taint{{Key: "challenge-operator.test/slow", Effect: corev1.TaintEffectNoSchedule}}}}
	g.Expect(k8s.Create(ctx, node)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), node) })

	// The pod an interrupted rollout left, the instance's own pod's twin, terminating.
	pods := &corev1.PodList{}
	g.Expect(k8s.List(ctx, pods, client.InNamespace(own), client.MatchingLabels{ctfv1alpha1.InstanceLabel: ch.Name})).To(Succeed())
	g.Expect(pods.Items).To(HaveLen(1))
	left := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: own, Name: "interrupted-rollout"}, Spec: *pods.Items[0].Spec.DeepCopy()}
	left.Spec.NodeName = node.Name
	g.Expect(k8s.Create(ctx, left)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), left, client.GracePeriodSeconds(0)) })
	g.Expect(k8s.Delete(ctx, left)).To(Succeed())
	quotaKey := client.ObjectKey{Namespace: own, Name: ch.Name}
	g.Eventually(func(g Gomega) int64 {
		quota := &corev1.ResourceQuota{}
		g.Expect(k8s.Get(ctx, quotaKey, quota)).To(Succeed())
		used := quota.Status.Used[corev1.ResourceLimitsCPU]
		return used.MilliValue()
	}, within(1), interval).Should(BeEquivalentTo(2000), "the quota counts the terminating pod beside the running one")

	// The next upgrade rolls out a new pod.
	g.Expect(harness.EditTemplate(ctx, k8s, tmpl, func(s *ctfv1alpha1.ChallengeTemplateSpec) { s.Image = "registry.example/ctf/web:2" })).To(Succeed())
	g.Eventually(func(g Gomega) {
		got := &ctfv1alpha1.Challenge{}
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(ch), got)).To(Succeed())
		g.Expect(got.Status.Phase).To(Equal(ctfv1alpha1.PhaseRunning), "%s %s", got.Status.Reason, got.Status.Message)
		running := &corev1.PodList{}
		g.Expect(k8s.List(ctx, running, client.InNamespace(own), client.MatchingLabels{ctfv1alpha1.InstanceLabel: ch.Name})).To(Succeed())
		g.Expect(running.Items).To(HaveLen(1))
		g.Expect(running.Items[0].Spec.Containers[0].Image).To(Equal(tmpl.Spec.Image))
	}, within(1), interval).Should(Succeed(), "the new rollout's pod admitted beside the terminating one")
	still := &corev1.Pod{}
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(left), still)).To(Succeed())
	g.Expect(still.DeletionTimestamp).NotTo(BeNil(), "the old pod was terminating throughout")

	g.Expect(k8s.Delete(ctx, left, client.GracePeriodSeconds(0))).To(Succeed())
	deleteAllAndCheck(t, ns, within(1))
}

// quantityOf is a Quantity of the API's, from s.
func quantityOf(s string) *ctfv1alpha1.Quantity { q := ctfv1alpha1.Quantity(s); return &q }
