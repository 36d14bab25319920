package lifecycle

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
)

// TestConditionsInAnyOrderMakeOneStatus: the Helm reconciler's conditions
// come in the order of whichever read they were rebuilt from; the status
// computed from them is one status, whatever the order, so that a write
// that changes nothing else is not made (an install's Pending was written
// twice, its conditions reordered, under load).
func TestConditionsInAnyOrderMakeOneStatus(t *testing.T) {
	now := metav1.Now()
	conds := []metav1.Condition{
		{Type: ConditionDeployed, Status: metav1.ConditionTrue, Reason: "InstallSuccessful", LastTransitionTime: now},
		{Type: "Initialized", Status: metav1.ConditionTrue, Reason: "AsExpected", LastTransitionTime: now},
		{Type: ConditionIrreconcilable, Status: metav1.ConditionFalse, Reason: "AsExpected", LastTransitionTime: now},
		{Type: ConditionReleaseFailed, Status: metav1.ConditionFalse, Reason: "AsExpected", LastTransitionTime: now},
	}
	var statuses []ctfv1alpha1.ChallengeStatus
	for _, order := range [][]int{{0, 1, 2, 3}, {3, 2, 1, 0}, {1, 3, 0, 2}} {
		var in []metav1.Condition
		for _, i := range order {
			in = append(in, conds[i])
		}
		st := ctfv1alpha1.ChallengeStatus{}
		Apply(&st, 1, Observation{Conditions: slices.Clone(in)}, now)
		statuses = append(statuses, st)
	}
	// The conditions the status sets anew carry the time of the call.
	for i := range statuses {
		for j := range statuses[i].Conditions {
			statuses[i].Conditions[j].LastTransitionTime = now
		}
	}
	for _, st := range statuses[1:] {
		if !equality.Semantic.DeepEqual(statuses[0], st) {
			t.Errorf("conditions in another order made another status:\n%+v\n%+v", statuses[0].Conditions, st.Conditions)
		}
	}
}
