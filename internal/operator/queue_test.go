package operator_test

import (
	"context"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/test/builders"
)

// TestQueueAdmitsInCreationOrder: with room for two instances of a
// template, five created one after the other give two Running and three
// Queued at positions 1 to 3; as instances go, the queued ones are
// installed in creation order, and a queued one deleted and created again
// goes to the back.
func TestQueueAdmitsInCreationOrder(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	h.Template(t, "queued", func(s *ctfv1alpha1.ChallengeTemplateSpec) { s.MaxInstances = ptr.To[int32](2) })
	ns := namespace(t)
	var chs []*ctfv1alpha1.Challenge
	for i := range 5 {
		ch := builders.FromTemplate(ns, fmt.Sprintf("q%d", i), fmt.Sprintf("team-q%d", i), "queued")
		g.Expect(k8s.Create(ctx, ch)).To(Succeed())
		chs = append(chs, ch)
	}
	positions := func(g Gomega) map[string]string {
		out := map[string]string{}
		for _, ch := range chs {
			got := &ctfv1alpha1.Challenge{}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(ch), got)).To(Succeed())
			out[ch.Name] = string(got.Status.Phase)
			if p := got.Status.QueuePosition; p != nil {
				out[ch.Name] += fmt.Sprint(*p)
			}
		}
		return out
	}
	g.Eventually(positions, timeout, interval).Should(Equal(map[string]string{
		"q0": "Running", "q1": "Running", "q2": "Queued1", "q3": "Queued2", "q4": "Queued3"}))
	got := &ctfv1alpha1.Challenge{}
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(chs[2]), got)).To(Succeed())
	g.Expect(got.Status.Reason).To(Equal("Queued"))
	g.Expect(got.Status.Endpoint).To(BeNil(), "nothing installed")
	g.Expect(apimeta.IsStatusConditionTrue(got.Status.Conditions, "Reconciling")).To(BeTrue(), "on its way, not stalled")
	g.Expect(apimeta.IsStatusConditionTrue(got.Status.Conditions, "Stalled")).To(BeFalse())

	g.Expect(k8s.Delete(ctx, chs[0])).To(Succeed())
	chs = chs[1:]
	g.Eventually(positions, timeout, interval).Should(Equal(map[string]string{
		"q1": "Running", "q2": "Running", "q3": "Queued1", "q4": "Queued2"}), "the first in the queue goes next")
	g.Expect(queueWaits(g)).To(BeNumerically(">=", 1), "its wait is measured")

	// Deleting a queued instance and creating it again puts it at the back:
	// wait for a second of the API server's clock, which orders creations.
	g.Expect(k8s.Delete(ctx, chs[2])).To(Succeed())
	h.EventuallyGone(t, chs[2], timeout, "the queued instance goes at once")
	g.Eventually(func() bool { return metav1.Now().Unix() > chs[3].CreationTimestamp.Unix() }, timeout, interval).Should(BeTrue())
	again := builders.FromTemplate(ns, "q3", "team-q3", "queued")
	g.Expect(k8s.Create(ctx, again)).To(Succeed())
	chs[2] = again
	g.Eventually(positions, timeout, interval).Should(Equal(map[string]string{
		"q1": "Running", "q2": "Running", "q4": "Queued1", "q3": "Queued2"}), "no jumping the queue")
}

// queueWaits is how many queue waits the operator has measured.
func queueWaits(g Gomega) uint64 {
	families, err := crmetrics.Registry.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() == "challenge_queue_wait_seconds" {
			return f.GetMetric()[0].GetHistogram().GetSampleCount()
		}
	}
	return 0
}

// counted is the value of the counter name whose labels include label=value
// (any series of name when label is empty); 0 before the first count.
func counted(g Gomega, name, label, value string) float64 {
	return series(g, name, label, value).GetCounter().GetValue()
}

// series is the first series of the metric name whose labels include
// label=value (any series of name when label is empty); nil when none.
func series(g Gomega, name, label, value string) *dto.Metric {
	if label == "" {
		return seriesWith(g, name, nil)
	}
	return seriesWith(g, name, map[string]string{label: value})
}

// seriesWith is the first series of the metric name whose labels include
// every one of labels; nil when none.
func seriesWith(g Gomega, name string, labels map[string]string) *dto.Metric {
	families, err := crmetrics.Registry.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			matched := 0
			for _, l := range m.GetLabel() {
				if v, ok := labels[l.GetName()]; ok && v == l.GetValue() {
					matched++
				}
			}
			if matched == len(labels) {
				return m
			}
		}
	}
	return nil
}
