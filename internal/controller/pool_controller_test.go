package controller_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/controller"
	"github.com/challenge-operator/challenge-operator/internal/pool"
	"github.com/challenge-operator/challenge-operator/test/controlplane"
)

// TestPoolStatusCountsWhatIsLeftAfterAShrink: as demand ages out, the pool
// shrinks to its min, and the template's status.pool.size says how many
// unclaimed instances it holds after the shrink, not before. The pool
// controller runs alone on a real API server, reconciled by hand, with the
// demand's clock moved forward.
func TestPoolStatusCountsWhatIsLeftAfterAShrink(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	_, cl := controlplane.StartAPIServer(t)
	g.Expect(cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "pool"}})).To(Succeed())

	tmpl := &ctfv1alpha1.ChallengeTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: "shrinking"},
		Spec: ctfv1alpha1.ChallengeTemplateSpec{
			Image: "registry.example/ctf/shrinking:1",
			Ports: []ctfv1alpha1.ChallengePort{{Name: "nc", Port: 1337}},
			Pool:  &ctfv1alpha1.PoolSpec{Min: 1, Max: 4},
		},
	}
	// No status yet: the pool controller may write before the template
	// status controller does.
	g.Expect(cl.Create(ctx, tmpl)).To(Succeed())

	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	demand := &pool.Demand{Now: func() time.Time { return now }}
	r := &controller.PoolReconciler{
		Pools:    &pool.Pools{Namespace: "pool", Reader: cl, Client: cl, Demand: demand},
		Live:     cl,
		Recorder: events.NewFakeRecorder(100),
	}
	reconcileAndRead := func() *ctfv1alpha1.PoolStatus {
		t.Helper()
		_, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(tmpl)})
		g.Expect(err).NotTo(HaveOccurred())
		got := &ctfv1alpha1.ChallengeTemplate{}
		g.Expect(cl.Get(ctx, client.ObjectKeyFromObject(tmpl), got)).To(Succeed())
		return got.Status.Pool
	}
	unclaimed := func() int {
		var list ctfv1alpha1.ChallengeList
		g.Expect(cl.List(ctx, &list, client.InNamespace("pool"), client.MatchingLabels{ctfv1alpha1.PoolLabel: tmpl.Name})).To(Succeed())
		n := 0
		for _, ch := range list.Items {
			if ch.DeletionTimestamp.IsZero() {
				n++
			}
		}
		return n
	}

	for range 3 {
		demand.Add(tmpl.Name)
	}
	g.Expect(reconcileAndRead()).To(HaveValue(Equal(ctfv1alpha1.PoolStatus{Size: 3, Ready: 0, Target: 3})), "grown to the demand")
	g.Expect(unclaimed()).To(Equal(3))

	now = now.Add(6 * time.Minute) // the demand ages out of the window
	g.Expect(reconcileAndRead()).To(HaveValue(Equal(ctfv1alpha1.PoolStatus{Size: 1, Ready: 0, Target: 1})), "shrunk to min")
	g.Expect(unclaimed()).To(Equal(1))
}
