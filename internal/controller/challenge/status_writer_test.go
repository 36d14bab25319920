package challenge

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/lifecycle"
)

// lastStatus is a cache holding one Challenge: the last status written.
type lastStatus struct {
	client.Reader
	ch *ctfv1alpha1.Challenge
}

func (r lastStatus) Get(_ context.Context, _ client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	r.ch.DeepCopyInto(obj.(*ctfv1alpha1.Challenge))
	return nil
}

// TestHelmConditionsKeepTheRenewalVerdict: the Helm reconciler writes
// conditions from a read older than the last status; the verdict on a
// renewal, which it does not manage, survives (it was lost, and a refused
// renewal looked unanswered).
func TestHelmConditionsKeepTheRenewalVerdict(t *testing.T) {
	renewed := metav1.Condition{Type: lifecycle.ConditionRenewed, Status: metav1.ConditionFalse,
		Reason: lifecycle.ReasonRenewalLimitReached, Message: "renewal refused", LastTransitionTime: metav1.Now()}
	last := &ctfv1alpha1.Challenge{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", ResourceVersion: "7"}}
	last.Status.Renewals = 1
	last.Status.Conditions = []metav1.Condition{renewed}

	fromHelm := &ctfv1alpha1.Challenge{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", ResourceVersion: "5"}}
	fromHelm.Status.Conditions = []metav1.Condition{{Type: "Deployed", Status: metav1.ConditionTrue, Reason: "InstallSuccessful"}}
	data, err := runtime.DefaultUnstructuredConverter.ToUnstructured(fromHelm)
	if err != nil {
		t.Fatal(err)
	}

	w := &StatusWriter{Reader: lastStatus{ch: last}}
	ch, _, err := w.decodeWithLast(context.Background(), &unstructured.Unstructured{Object: data}, w.Reader)
	if err != nil {
		t.Fatal(err)
	}
	got := meta.FindStatusCondition(ch.Status.Conditions, lifecycle.ConditionRenewed)
	if got == nil || got.Reason != lifecycle.ReasonRenewalLimitReached {
		t.Fatalf("the renewal verdict was lost: %+v", ch.Status.Conditions)
	}
	if meta.FindStatusCondition(ch.Status.Conditions, "Deployed") == nil {
		t.Fatalf("the reconciler's own condition was lost: %+v", ch.Status.Conditions)
	}
	if ch.ResourceVersion != "7" || ch.Status.Renewals != 1 {
		t.Fatalf("not written over the last status: resourceVersion %s, renewals %d", ch.ResourceVersion, ch.Status.Renewals)
	}
}
