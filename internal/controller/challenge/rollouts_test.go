package challenge

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
)

func deployment(generation, observed int64) appsv1.Deployment {
	one := int32(1)
	return appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "changing", Namespace: "team-a", Generation: generation,
			Labels: map[string]string{ctfv1alpha1.InstanceLabel: "changing"}},
		Spec: appsv1.DeploymentSpec{Replicas: &one},
		Status: appsv1.DeploymentStatus{ObservedGeneration: observed, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1,
			Conditions: []appsv1.DeploymentCondition{
				{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue},
				{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable"},
			}},
	}
}

// TestAnUpgradeNeverShowsRunningFromALaggingCache: right after an upgrade,
// a cache that still holds the Deployment as it was (done rolling out) is
// not believed: the Deployment read live, its new generation not yet
// observed, stands in, and the workload is in progress; once the cache
// holds the new generation, it is believed again. Without Rollouts the
// lagging cache says Current: the Running flash.
func TestAnUpgradeNeverShowsRunningFromALaggingCache(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	scheme := runtime.NewScheme()
	g.Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	afterUpgrade := deployment(2, 1) // the API server: Helm's patch, not yet observed
	live := fake.NewClientBuilder().WithScheme(scheme).WithObjects(&afterUpgrade).Build()
	inst := &ctfv1alpha1.Challenge{ObjectMeta: metav1.ObjectMeta{Name: "changing", Namespace: "team-a"}}
	status := func(deps []appsv1.Deployment) string {
		ws, err := workloadsOf(deps)
		g.Expect(err).NotTo(HaveOccurred())
		return string(ws[0].Status)
	}

	lagging := []appsv1.Deployment{deployment(1, 1)}
	g.Expect(status(lagging)).To(Equal("Current"), "what a lagging cache alone says")

	r := &Rollouts{Live: live}
	g.Expect(r.Expect(ctx, "team-a", inst)).To(Succeed())
	g.Expect(status(r.Fresh([]appsv1.Deployment{deployment(1, 1)}))).To(Equal("InProgress"))

	caughtUp := []appsv1.Deployment{deployment(2, 2)}
	g.Expect(status(r.Fresh(caughtUp))).To(Equal("Current"))
	g.Expect(status(r.Fresh([]appsv1.Deployment{deployment(1, 1)}))).To(Equal("Current"), "forgotten once the cache caught up")
}

// TestARolloutSeenOverLiveIsNotUndoneByTheCache: on a loaded machine the
// rollout may be over by the time the Deployment is read live after the
// upgrade (Current: the status says Running), while the cache still walks
// through the new generation's first states, in order. Those are older
// than the live read and are not believed: believed because their
// generation is the live one's, they said InProgress and the phase went
// back to Pending (Running, Pending, Running, Pending, Running). Once the
// cache passes the live read, it is believed again, whatever it says.
func TestARolloutSeenOverLiveIsNotUndoneByTheCache(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	scheme := runtime.NewScheme()
	g.Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	at := func(d appsv1.Deployment, rv string) appsv1.Deployment {
		d.ResourceVersion = rv
		return d
	}
	rolledOut := at(deployment(2, 2), "40") // the API server: the upgrade's rollout is over
	live := fake.NewClientBuilder().WithScheme(scheme).WithObjects(&rolledOut).Build()
	inst := &ctfv1alpha1.Challenge{ObjectMeta: metav1.ObjectMeta{Name: "changing", Namespace: "team-a"}}
	status := func(deps []appsv1.Deployment) string {
		ws, err := workloadsOf(deps)
		g.Expect(err).NotTo(HaveOccurred())
		return string(ws[0].Status)
	}
	r := &Rollouts{Live: live}
	g.Expect(r.Expect(ctx, "team-a", inst)).To(Succeed())
	var read appsv1.Deployment
	g.Expect(live.Get(ctx, client.ObjectKeyFromObject(&rolledOut), &read)).To(Succeed())
	g.Expect(status([]appsv1.Deployment{read})).To(Equal("Current"), "the live read the status was written from")

	notUpdated := deployment(2, 2)
	notUpdated.Status.UpdatedReplicas = 0
	lagging := []appsv1.Deployment{
		at(deployment(1, 1), "30"), // before the upgrade
		at(deployment(2, 1), "31"), // Helm's patch, not yet observed
		at(notUpdated, "33"),       // observed, the new ReplicaSet's pod not there yet
	}
	for _, cached := range lagging {
		g.Expect(status(r.Fresh([]appsv1.Deployment{cached}))).To(Equal("Current"),
			"a cache at generation %d, resourceVersion %s, is older than the live read %s", cached.Generation, cached.ResourceVersion, read.ResourceVersion)
	}

	g.Expect(status(r.Fresh([]appsv1.Deployment{at(deployment(2, 2), read.ResourceVersion)}))).To(Equal("Current"), "caught up")
	notReady := at(deployment(2, 2), "50")
	notReady.Status.AvailableReplicas = 0
	g.Expect(status(r.Fresh([]appsv1.Deployment{notReady}))).To(Equal("InProgress"), "past the live read, the cache is believed")
}
