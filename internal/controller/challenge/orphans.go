package challenge

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/identity"
)

// ReasonOrphanDeleted is the Event on a namespace of its own deleted because
// its Challenge was gone.
const ReasonOrphanDeleted = "OrphanDeleted"

// OrphanedNamespaceReconciler deletes, with a namespace per instance, an
// instance's namespace whose Challenge is gone. The uninstall finalizer
// deletes it in the normal course; but whoever may patch a Challenge (the
// platform, to renew one; an admin clearing a stuck deletion) can take the
// finalizer off, and the namespace, cluster-scoped and owned by nothing,
// would then run on for good, outside expiry, the quota, the team's budget
// and --max-instances. Everything of the instance is in it, so deleting it
// deletes the instance.
type OrphanedNamespaceReconciler struct {
	// Client reads the cache (namespaces of instances, Challenges) and
	// deletes.
	Client client.Client
	// Live reads a Challenge from the API server when the cache does not
	// show it: one created a moment ago is not an orphan's.
	Live     client.Reader
	Recorder events.EventRecorder
}

// Reconcile deletes one instance namespace if its Challenge is gone.
func (r *OrphanedNamespaceReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ns := &corev1.Namespace{}
	if err := r.Client.Get(ctx, req.NamespacedName, ns); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	owner, ok := instanceOf(ns)
	if !ok || !ns.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	if gone, err := r.gone(ctx, owner); err != nil || !gone {
		return ctrl.Result{}, err
	}
	if err := r.Client.Delete(ctx, ns, client.Preconditions{UID: &ns.UID}); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	log := ctrl.LoggerFrom(ctx)
	log.Info("deleted an instance namespace whose Challenge is gone", "challenge", owner.String())
	if r.Recorder != nil {
		r.Recorder.Eventf(ns, nil, corev1.EventTypeWarning, ReasonOrphanDeleted, "Delete",
			"Challenge %s is gone (its finalizer was taken off before its uninstall): its namespace is deleted", owner)
	}
	return ctrl.Result{}, nil
}

// gone tells whether the Challenge named owner is gone: not in the cache,
// and not on the API server either.
func (r *OrphanedNamespaceReconciler) gone(ctx context.Context, owner types.NamespacedName) (bool, error) {
	err := r.Client.Get(ctx, owner, &ctfv1alpha1.Challenge{})
	if !apierrors.IsNotFound(err) {
		return false, err
	}
	live := &metav1.PartialObjectMetadata{}
	live.SetGroupVersionKind(ctfv1alpha1.GroupVersion.WithKind("Challenge"))
	err = r.Live.Get(ctx, owner, live)
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading Challenge %s: %w", owner, err)
	}
	return false, nil
}

// instanceOf names the Challenge whose namespace of its own ns is: by its
// instance labels, and only if its name is the one derived from them
// (labels alone are no proof).
func instanceOf(ns *corev1.Namespace) (types.NamespacedName, bool) {
	owner := types.NamespacedName{Namespace: ns.Labels[ctfv1alpha1.InstanceNamespaceLabel], Name: ns.Labels[ctfv1alpha1.InstanceLabel]}
	if owner.Namespace == "" || owner.Name == "" {
		return owner, false
	}
	ch := &ctfv1alpha1.Challenge{ObjectMeta: metav1.ObjectMeta{Namespace: owner.Namespace, Name: owner.Name}}
	return owner, identity.Namespace(ch) == ns.Name
}

// SetupWithManager watches the instances' namespaces (the cache holds
// only those) and the Challenges' deletions, which leave a namespace
// unchanged when no finalizer held them.
func (r *OrphanedNamespaceReconciler) SetupWithManager(mgr ctrl.Manager) error {
	ofDeleted := handler.TypedEnqueueRequestsFromMapFunc(func(_ context.Context, ch *ctfv1alpha1.Challenge) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: identity.Namespace(ch)}}}
	})
	return ctrl.NewControllerManagedBy(mgr).Named("orphaned-namespaces").
		For(&corev1.Namespace{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			_, ok := instanceOf(o.(*corev1.Namespace))
			return ok
		}))).
		WatchesRawSource(source.Kind(mgr.GetCache(), &ctfv1alpha1.Challenge{}, ofDeleted, deletions[*ctfv1alpha1.Challenge]())).
		Complete(r)
}
