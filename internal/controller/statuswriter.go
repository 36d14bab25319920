package controller

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/lifecycle"
)

// StatusWriter computes the whole status of a Challenge and writes it. It is
// the only code that writes Challenge status: the Helm reconciler's writes
// reach it through StatusClient, the StatusReconciler's directly.
type StatusWriter struct {
	// Client writes the status.
	Client client.Client
	// APIReader reads the last written status, which the Helm reconciler's
	// own status rewrite would otherwise erase.
	APIReader client.Reader
	// Observer reads what the status depends on.
	Observer *Observer
}

// Compute fills ch.Status from what is observed now. It reports whether the status changed.
func (w *StatusWriter) Compute(ctx context.Context, ch *ctfv1alpha1.Challenge) (bool, error) {
	obs, err := w.Observer.Observe(ctx, ch)
	if err != nil {
		return false, err
	}
	next := ch.Status.DeepCopy()
	lifecycle.Apply(next, ch.Generation, obs, metav1.Now())
	if equality.Semantic.DeepEqual(&ch.Status, next) {
		return false, nil
	}
	ch.Status = *next
	return true, nil
}

// updateFromHelm completes a status written by the Helm reconciler (which
// holds only its conditions and deployedRelease) and writes it.
func (w *StatusWriter) updateFromHelm(ctx context.Context, obj *unstructured.Unstructured, opts ...client.SubResourceUpdateOption) error {
	ch := &ctfv1alpha1.Challenge{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, ch); err != nil {
		return fmt.Errorf("decoding Challenge %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
	}
	last := &ctfv1alpha1.Challenge{}
	if err := w.APIReader.Get(ctx, client.ObjectKeyFromObject(obj), last); err != nil {
		return err
	}
	keepOnceOnly(&ch.Status, &last.Status)
	if _, err := w.Compute(ctx, ch); err != nil {
		return err
	}
	if err := w.Client.Status().Update(ctx, ch, opts...); err != nil {
		return err
	}
	// Hand the new resourceVersion and status back to the Helm reconciler,
	// which may go on to update the object (its finalizer).
	out, err := runtime.DefaultUnstructuredConverter.ToUnstructured(ch)
	if err != nil {
		return err
	}
	gvk := obj.GroupVersionKind()
	obj.Object = out
	obj.SetGroupVersionKind(gvk)
	return nil
}

// keepOnceOnly carries over what is set once and never recomputed.
func keepOnceOnly(st, last *ctfv1alpha1.ChallengeStatus) {
	if st.StartedAt == nil {
		st.StartedAt = last.StartedAt
	}
	if st.ReadyAt == nil {
		st.ReadyAt = last.ReadyAt
	}
}
