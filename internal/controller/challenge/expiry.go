package challenge

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/metrics"
)

// ReasonExpired is the Event reason when an instance is deleted at expiry.
const ReasonExpired = "Expired"

// ExpiryReconciler deletes a Challenge when status.expiresAt passes. Each
// Challenge carries its own timer (RequeueAfter), so nothing polls all of them;
// a renewal moves expiresAt, which requeues it.
type ExpiryReconciler struct {
	Client   client.Client
	Recorder events.EventRecorder
}

// Reconcile deletes the Challenge if it has expired, or waits until it does.
func (r *ExpiryReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ch := &ctfv1alpha1.Challenge{}
	if err := r.Client.Get(ctx, req.NamespacedName, ch); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if ch.Status.ExpiresAt == nil || !ch.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	if left := time.Until(ch.Status.ExpiresAt.Time); left > 0 {
		return ctrl.Result{RequeueAfter: left}, nil
	}
	// The UID precondition keeps a timer from deleting a re-created namesake.
	// Background, not foreground: the garbage collector would otherwise
	// delete the release record (owned by the Challenge) before the
	// uninstall reads it; the uninstall removes every object itself.
	err := r.Client.Delete(ctx, ch, client.Preconditions{UID: &ch.UID}, client.PropagationPolicy(metav1.DeletePropagationBackground))
	if err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	metrics.ObserveExpiry()
	r.Recorder.Eventf(ch, nil, corev1.EventTypeNormal, ReasonExpired, "Delete",
		"the instance expired at %s and is being deleted", ch.Status.ExpiresAt.UTC().Format(time.RFC3339))
	return ctrl.Result{}, nil
}

// +kubebuilder:rbac:groups=ctf.challenge-operator.io,resources=challenges,verbs=delete

// SetupWithManager watches Challenges: each one seen (at start too), and
// each change of its expiresAt. No other change moves its timer, and in a
// burst most changes are others' (a claim's, a status write's).
func (r *ExpiryReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).Named("challenge-expiry").
		For(&ctfv1alpha1.Challenge{}, builder.WithPredicates(expiryMoved())).
		Complete(r)
}

// expiryMoved passes a Challenge's creation (or first sight) and the
// updates that change its status.expiresAt.
func expiryMoved() predicate.Funcs {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			before, ok := e.ObjectOld.(*ctfv1alpha1.Challenge)
			after, ok2 := e.ObjectNew.(*ctfv1alpha1.Challenge)
			return !ok || !ok2 || !before.Status.ExpiresAt.Equal(after.Status.ExpiresAt)
		},
		DeleteFunc: func(event.DeleteEvent) bool { return false },
	}
}
