package challenge

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/controller"
	"github.com/challenge-operator/challenge-operator/internal/lifecycle"
	"github.com/challenge-operator/challenge-operator/internal/pool"
)

// StatusReconciler keeps a Challenge's status true when only its workloads
// change: the Helm reconciler's dependent watches ignore status-only changes,
// so a Deployment becoming Available would otherwise never reach the phase.
type StatusReconciler struct {
	Client client.Client
	Writer *StatusWriter
	// MaxConcurrentReconciles is how many Challenges' status is computed at
	// once: in a burst every instance's workloads change several times, and
	// one worker made instances wait seconds to be reported Running.
	MaxConcurrentReconciles int
	// Gateways watches the Gateway API routes that expose instances too.
	Gateways bool
	// Pools, when set, makes a claimed pooled instance's every change
	// recompute its claimant's status, which is its.
	Pools *pool.Pools
}

// +kubebuilder:rbac:groups=ctf.challenge-operator.io,resources=challenges,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=ctf.challenge-operator.io,resources=challenges/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=ctf.challenge-operator.io,resources=challenges/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=nodes;pods,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile recomputes the status of one Challenge and writes it if it changed.
func (r *StatusReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ch := &ctfv1alpha1.Challenge{}
	if err := r.Client.Get(ctx, req.NamespacedName, ch); err != nil {
		if apierrors.IsNotFound(err) {
			r.Writer.Forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !meta.IsStatusConditionPresentAndEqual(ch.Status.Conditions, lifecycle.ConditionInitialized, metav1.ConditionTrue) {
		// Until the Helm reconciler has written once, the schema's default
		// (phase None) is the truth; writing now would only race its finalizer.
		return ctrl.Result{}, nil
	}
	// A conflict means another write got there first: requeue and recompute.
	if err := r.Writer.Refresh(ctx, ch); err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, nil
}

// SetupWithManager watches Challenges and the objects of their releases.
func (r *StatusReconciler) SetupWithManager(mgr ctrl.Manager) error {
	b := ctrl.NewControllerManagedBy(mgr).
		Named("challenge-status").
		WithOptions(ctrlcontroller.Options{MaxConcurrentReconciles: max(1, r.MaxConcurrentReconciles)}).
		For(&ctfv1alpha1.Challenge{}).
		// Map the instance's objects by their labels rather than owner
		// references: pods belong to ReplicaSets, and an instance in a
		// namespace of its own cannot be owned across namespaces.
		Watches(&appsv1.Deployment{}, handler.EnqueueRequestsFromMapFunc(controller.ChallengeOfInstanceObject)).
		Watches(&corev1.Service{}, handler.EnqueueRequestsFromMapFunc(controller.ChallengeOfInstanceObject)).
		Watches(&networkingv1.Ingress{}, handler.EnqueueRequestsFromMapFunc(controller.ChallengeOfInstanceObject)).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(controller.ChallengeOfInstanceObject))
	if r.Pools != nil {
		b = b.Watches(&ctfv1alpha1.Challenge{}, handler.EnqueueRequestsFromMapFunc(claimantOf))
	}
	if r.Gateways {
		b = b.Watches(&gatewayv1.TLSRoute{}, handler.EnqueueRequestsFromMapFunc(controller.ChallengeOfInstanceObject)).
			Watches(&gatewayv1.HTTPRoute{}, handler.EnqueueRequestsFromMapFunc(controller.ChallengeOfInstanceObject))
	}
	return b.Complete(r)
}

// claimantOf maps a claimed pooled instance to the Challenge that claimed it.
func claimantOf(_ context.Context, obj client.Object) []reconcile.Request {
	if key, _, ok := pool.Claimant(obj); ok {
		return []reconcile.Request{{NamespacedName: key}}
	}
	return nil
}
