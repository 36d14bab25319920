package operator_test

import (
	"context"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/test/builders"
)

// TestFailedInstallBacksOff: a NodePort instance in a namespace whose quota
// allows no node ports fails to install; Helm rolls the install back,
// deleting its Deployment and its release record. Those deletions once
// started the next install at once, so the operator created and deleted the
// instance's objects in a hot loop (about two Deployments a second per
// Challenge). The Challenge must stay in Error with Helm's reason, retried
// with backoff, and install once the quota allows it.
func TestFailedInstallBacksOff(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t)
	quota := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "no-node-ports", Namespace: ns},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourceServicesNodePorts: resource.MustParse("0")}},
	}
	g.Expect(k8s.Create(ctx, quota)).To(Succeed())
	// The API server enforces a quota once the quota controller has counted its
	// usage: a Service created before then may get its node port (seen under load).
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(quota), quota)).To(Succeed())
		g.Expect(quota.Status.Hard).To(HaveKey(corev1.ResourceServicesNodePorts))
		g.Expect(quota.Status.Used).To(HaveKey(corev1.ResourceServicesNodePorts))
	}, timeout, interval).Should(Succeed())
	created := countCreatedDeployments(t, ns)

	ch := builders.Challenge(ns, "nodeports", "team-np")
	ch.Spec.Expose = &ctfv1alpha1.Expose{Type: ctfv1alpha1.ExposeNodePort}
	g.Expect(k8s.Create(ctx, ch)).To(Succeed())
	got := eventuallyPhase(t, ch, ctfv1alpha1.PhaseError)
	g.Expect(got.Status.Reason).To(Equal("InstallError"))
	g.Expect(got.Status.Message).To(ContainSubstring("exceeded quota"))

	const window = 15 * time.Second
	before := created()
	g.Consistently(func(g Gomega) {
		g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: ch.Name}, got)).To(Succeed())
		g.Expect(got.Status.Phase).To(Equal(ctfv1alpha1.PhaseError))
		g.Expect(got.Status.Reason).To(Equal("InstallError"))
	}, window, interval).Should(Succeed())
	attempts := created() - before
	t.Logf("install attempts in %s after the first Error: %d", window, attempts)
	// Backoff from 100 ms, doubling, makes about 7 in 15 s; the hot loop made 30.
	g.Expect(attempts).To(BeNumerically("<=", 10), "install attempts in %s", window)

	g.Expect(k8s.Delete(ctx, quota)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: ch.Name}, got)).To(Succeed())
		g.Expect(got.Status.Phase).To(Equal(ctfv1alpha1.PhaseRunning))
	}, 2*window+timeout, interval).Should(Succeed(), "the backoff retries the install once the quota allows it")
}

// countCreatedDeployments watches the Deployments of namespace ns and returns
// how many have been created so far.
func countCreatedDeployments(t *testing.T, ns string) func() int {
	cs, err := kubernetes.NewForConfig(cluster.Config)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	w, err := cs.AppsV1().Deployments(ns).Watch(context.Background(), metav1.ListOptions{})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	t.Cleanup(w.Stop)
	var mu sync.Mutex
	n := 0
	go func() {
		for e := range w.ResultChan() {
			if e.Type == watch.Added {
				mu.Lock()
				n++
				mu.Unlock()
			}
		}
	}()
	return func() int {
		mu.Lock()
		defer mu.Unlock()
		return n
	}
}

// TestObjectNotTheInstancesIsNeverTaken: an install's check that an object
// does not exist yet is answered from the cache, which holds only instance
// objects. A ServiceAccount of someone else's with the name the release
// gives its own is therefore presumed absent; its create fails, and the
// install's rollback deletes what the install created but not it. The next
// install asks the API server, and Helm refuses the object by name, as it
// did before the cache answered. With the object gone, the instance starts.
func TestObjectNotTheInstancesIsNeverTaken(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t)
	foreign := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "taken", Namespace: ns, Labels: map[string]string{"owner": "bystander"}}}
	g.Expect(k8s.Create(ctx, foreign)).To(Succeed())

	ch := builders.Challenge(ns, "taken", "team-taken")
	g.Expect(k8s.Create(ctx, ch)).To(Succeed())
	got := eventuallyPhase(t, ch, ctfv1alpha1.PhaseError)
	g.Expect(got.Status.Reason).To(Equal("InstallError"))
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(ch), got)).To(Succeed())
		g.Expect(got.Status.Message).To(ContainSubstring("exists and cannot be imported into the current release"))
	}, timeout, interval).Should(Succeed(), "the retry asks the API server, and Helm refuses the object")

	after := &corev1.ServiceAccount{}
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(foreign), after)).To(Succeed(), "never deleted")
	g.Expect(after.UID).To(Equal(foreign.UID))
	g.Expect(after.Labels).To(Equal(foreign.Labels), "never taken")
	g.Expect(after.Annotations).To(BeEmpty(), "never taken")
	g.Eventually(func(g Gomega) {
		var policies networkingv1.NetworkPolicyList
		g.Expect(k8s.List(ctx, &policies, client.InNamespace(ns))).To(Succeed())
		g.Expect(policies.Items).To(BeEmpty(), "what the failed install created is rolled back")
		var records corev1.SecretList
		g.Expect(k8s.List(ctx, &records, client.InNamespace(ns), client.MatchingLabels{"owner": "helm"})).To(Succeed())
		g.Expect(records.Items).To(BeEmpty())
	}, timeout, interval).Should(Succeed())

	g.Expect(k8s.Delete(ctx, foreign)).To(Succeed())
	g.Expect(k8s.Patch(ctx, got, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"retry":"1"}}}`)))).To(Succeed())
	eventuallyPhase(t, ch, ctfv1alpha1.PhaseRunning)
}
