package admission

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/lifecycle"
)

// Admission's wake-ups, beside its rules: which Challenge events free what
// a Challenge may be waiting for, and which Challenges they wake. The Helm
// reconciler's watches (challenge.HelmWatches) call them.

// LeavesOrFails passes the Challenge events that free a place in the queue
// or a team's budget: an instance leaving (its deletion begun, or gone),
// and one failing before it was installed (neither the queue nor the budget
// counts it then, in creation order).
var LeavesOrFails = predicate.TypedFuncs[*ctfv1alpha1.Challenge]{
	CreateFunc:  func(event.TypedCreateEvent[*ctfv1alpha1.Challenge]) bool { return false },
	GenericFunc: func(event.TypedGenericEvent[*ctfv1alpha1.Challenge]) bool { return false },
	UpdateFunc: func(e event.TypedUpdateEvent[*ctfv1alpha1.Challenge]) bool {
		leaving := e.ObjectOld.DeletionTimestamp.IsZero() && !e.ObjectNew.DeletionTimestamp.IsZero()
		return leaving || failedUninstalled(e.ObjectOld, e.ObjectNew)
	},
}

// failedUninstalled tells whether a Challenge with nothing installed has
// just turned Error: it no longer holds a place in the queue.
func failedUninstalled(old, cur *ctfv1alpha1.Challenge) bool {
	return old.Status.Phase != ctfv1alpha1.PhaseError && cur.Status.Phase == ctfv1alpha1.PhaseError && !lifecycle.Installed(&cur.Status)
}

// MayWaitForBudget keeps the Challenges not admitted yet, nor installed:
// those a team's budget may hold back, which a sibling leaving or failing
// wakes. An admitted one is past its judgement, and woken again it would
// reconcile its release for nothing.
func MayWaitForBudget(ch *ctfv1alpha1.Challenge) bool {
	return ch.Status.AdmittedAt == nil && !lifecycle.Installed(&ch.Status)
}

// Waiting keeps the Challenges that may be waiting for a place, which a
// place freed wakes: Queued ones, and those not admitted, installed nor
// refused yet that a bound of the queue applies to (MayWait), whose
// judgement (Queued, perhaps, behind what has just failed or left) may be
// under way and unwritten. Woken only when their status said Queued, one
// judged behind a failure not yet written as one stayed Queued with a place
// free; woken whatever the bound, every instance starting was reconciled
// again at every instance leaving, cluster wide. cl reads templates.
func (q *Queue) Waiting(ctx context.Context, cl client.Reader) func(*ctfv1alpha1.Challenge) bool {
	return func(ch *ctfv1alpha1.Challenge) bool {
		if ch.Status.Phase == ctfv1alpha1.PhaseQueued {
			return true
		}
		if !ch.DeletionTimestamp.IsZero() || ch.Status.Phase == ctfv1alpha1.PhaseError || !MayWaitForBudget(ch) {
			return false
		}
		var tmpl *ctfv1alpha1.ChallengeTemplate
		if ch.Spec.Template != "" {
			tmpl = &ctfv1alpha1.ChallengeTemplate{}
			if err := cl.Get(ctx, client.ObjectKey{Name: ch.Spec.Template}, tmpl); err != nil {
				return true // unknown: woken, to be judged
			}
		}
		return q.MayWait(ch, tmpl)
	}
}
