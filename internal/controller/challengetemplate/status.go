package challengetemplate

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/controller"
)

// TemplateStatusReconciler keeps ChallengeTemplate.status.activeInstances true.
type TemplateStatusReconciler struct {
	Client client.Client
	// Status writes the count.
	Status *TemplateStatusWriter
}

// +kubebuilder:rbac:groups=ctf.challenge-operator.io,resources=challengetemplates,verbs=get;list;watch

// Reconcile counts the template's Challenges that are not being deleted.
func (r *TemplateStatusReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	tmpl, err := r.Status.Read(ctx, req.NamespacedName, nil)
	if tmpl == nil || err != nil {
		return ctrl.Result{}, err
	}
	var list ctfv1alpha1.ChallengeList
	// Read-only, so the cache's own objects: a copy of each would cost the
	// whole template's instances at every change of any of them.
	if err := r.Client.List(ctx, &list, client.MatchingFields{controller.TemplateField: tmpl.Name}, client.UnsafeDisableDeepCopy); err != nil {
		return ctrl.Result{}, err
	}
	var active int32
	for i := range list.Items {
		if list.Items[i].DeletionTimestamp.IsZero() {
			active++
		}
	}
	return ctrl.Result{}, r.Status.Set(ctx, tmpl, func(st *ctfv1alpha1.ChallengeTemplateStatus) { st.ActiveInstances = active })
}

// SetupWithManager watches templates and the Challenges that use them.
func (r *TemplateStatusReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("challengetemplate-status").
		// Its count depends on no field of the template, and its status
		// changes with every instance.
		For(&ctfv1alpha1.ChallengeTemplate{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&ctfv1alpha1.Challenge{}, controller.Settled(templateOf, controller.TemplateSettle)).
		Complete(r)
}

// templateOf maps a Challenge to its template.
func templateOf(_ context.Context, obj client.Object) []reconcile.Request {
	ch, ok := obj.(*ctfv1alpha1.Challenge)
	if !ok || ch.Spec.Template == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: ch.Spec.Template}}}
}
