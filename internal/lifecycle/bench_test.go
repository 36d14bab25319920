package lifecycle

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
)

// BenchmarkApply measures one full status computation, done on every status write.
func BenchmarkApply(b *testing.B) {
	o := Observation{Conditions: []metav1.Condition{deployed, notFailed}, Workloads: []Workload{ready}, Endpoints: ep}
	b.ReportAllocs()
	for b.Loop() {
		st := &ctfv1alpha1.ChallengeStatus{}
		Apply(st, 1, o, metav1.Now())
	}
}
