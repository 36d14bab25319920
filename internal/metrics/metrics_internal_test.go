package metrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
)

// TestPhasesCountEachInstanceOnce: a claimed pooled instance and its
// claimant are one instance, Running once; an unclaimed pooled one is the
// pool's metrics' affair, not a team's phase.
func TestPhasesCountEachInstanceOnce(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := ctfv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	running := func(ns, name string) *ctfv1alpha1.Challenge {
		return &ctfv1alpha1.Challenge{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Status: ctfv1alpha1.ChallengeStatus{Phase: ctfv1alpha1.PhaseRunning}}
	}
	reader := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		running("teams", "web"), running("pool", "web-pool-a"), running("pool", "web-pool-b")).Build()
	c := &phaseCollector{reader: reader, pooled: func(ch *ctfv1alpha1.Challenge) bool { return ch.Namespace == "pool" }}
	metrics := make(chan prometheus.Metric, 16)
	c.Collect(metrics)
	close(metrics)
	counts := map[string]float64{}
	for m := range metrics {
		var out dto.Metric
		if err := m.Write(&out); err != nil {
			t.Fatal(err)
		}
		counts[out.GetLabel()[0].GetValue()] = out.GetGauge().GetValue()
	}
	if counts["Running"] != 1 || counts["None"] != 0 || len(counts) != 6 {
		t.Fatalf("counts %v: want one Running instance and every phase present", counts)
	}
}
