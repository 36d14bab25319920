package operator_test

import (
	"context"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/challenge-operator/challenge-operator/internal/operator"
)

// TestEventsBeyondTheirLimitWaitAndArrive: with the operator's Events
// bounded to 2 at once and 10 a second, 30 Events about one object, each of
// its own, are all written: those beyond the limit wait, none is dropped.
func TestEventsBeyondTheirLimitWaitAndArrive(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := namespace(t)
	regarding := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "reported"}}
	g.Expect(k8s.Create(ctx, regarding)).To(Succeed())

	b, err := operator.LimitedBroadcaster(cluster.Config, operator.EventLimit{QPS: 10, Burst: 2})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(b.StartRecordingToSinkWithContext(ctx)).To(Succeed())
	defer b.Shutdown()
	recorder := b.NewRecorder(k8s.Scheme(), "limited-events-test")
	const n = 30
	for i := range n {
		recorder.Eventf(regarding, nil, corev1.EventTypeNormal, fmt.Sprintf("Reason%d", i), "Report", "event %d", i)
	}
	g.Eventually(func(g Gomega) {
		var list eventsv1.EventList
		g.Expect(k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
		reasons := map[string]bool{}
		for _, e := range list.Items {
			if e.ReportingController == "limited-events-test" {
				reasons[e.Reason] = true
			}
		}
		g.Expect(reasons).To(HaveLen(n))
	}, timeout, interval).Should(Succeed(), "every Event is written")
}
