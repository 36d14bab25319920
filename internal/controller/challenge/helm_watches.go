package challenge

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/operator-framework/helm-operator-plugins/pkg/reconciler"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/action"
	"github.com/challenge-operator/challenge-operator/internal/admission"
	"github.com/challenge-operator/challenge-operator/internal/containment"
	"github.com/challenge-operator/challenge-operator/internal/controller"
	"github.com/challenge-operator/challenge-operator/internal/pool"
)

// AddIndexes lets Challenges be listed by template, participant and
// claimant, pooled ones that may be claimed by template, and an instance's
// objects by instance.
func AddIndexes(mgr ctrl.Manager, gateways bool) error {
	indexer := mgr.GetFieldIndexer()
	ctx := context.Background()
	if err := indexer.IndexField(ctx, &ctfv1alpha1.Challenge{}, controller.TemplateField, func(o client.Object) []string {
		return []string{o.(*ctfv1alpha1.Challenge).Spec.Template}
	}); err != nil {
		return fmt.Errorf("indexing Challenges by template: %w", err)
	}
	if err := indexer.IndexField(ctx, &ctfv1alpha1.Challenge{}, admission.ParticipantField, func(o client.Object) []string {
		return []string{o.(*ctfv1alpha1.Challenge).Spec.Participant}
	}); err != nil {
		return fmt.Errorf("indexing Challenges by participant: %w", err)
	}
	if err := indexer.IndexField(ctx, &ctfv1alpha1.Challenge{}, pool.ClaimantField, pool.IndexClaimant); err != nil {
		return fmt.Errorf("indexing pooled Challenges by claimant: %w", err)
	}
	if err := indexer.IndexField(ctx, &ctfv1alpha1.Challenge{}, pool.ClaimableField, pool.IndexClaimable); err != nil {
		return fmt.Errorf("indexing pooled Challenges that may be claimed: %w", err)
	}
	for _, kind := range InstanceKinds(gateways) {
		if err := indexer.IndexField(ctx, kind.Object, InstanceField, IndexInstance); err != nil {
			return fmt.Errorf("indexing %T by instance: %w", kind.Object, err)
		}
	}
	return nil
}

// InstanceKind is a kind of an instance's objects, as an object and a list.
type InstanceKind struct {
	Object client.Object
	List   func() client.ObjectList
}

// InstanceKinds are the kinds of an instance's objects that its teardown
// waits for, and that the cache indexes by instance: a list by label would
// pass over every object of the namespace for each instance torn down.
// Deployments and pods are also what its status observes.
func InstanceKinds(gateways bool) []InstanceKind {
	kinds := []InstanceKind{
		{&appsv1.Deployment{}, func() client.ObjectList { return &appsv1.DeploymentList{} }},
		{&appsv1.ReplicaSet{}, func() client.ObjectList { return &appsv1.ReplicaSetList{} }},
		{&corev1.Pod{}, func() client.ObjectList { return &corev1.PodList{} }},
		{&corev1.Service{}, func() client.ObjectList { return &corev1.ServiceList{} }},
		{&networkingv1.Ingress{}, func() client.ObjectList { return &networkingv1.IngressList{} }},
		{&networkingv1.NetworkPolicy{}, func() client.ObjectList { return &networkingv1.NetworkPolicyList{} }},
		{&corev1.ServiceAccount{}, func() client.ObjectList { return &corev1.ServiceAccountList{} }},
	}
	if gateways {
		kinds = append(kinds,
			InstanceKind{&gatewayv1.TLSRoute{}, func() client.ObjectList { return &gatewayv1.TLSRouteList{} }},
			InstanceKind{&gatewayv1.HTTPRoute{}, func() client.ObjectList { return &gatewayv1.HTTPRouteList{} }})
	}
	return kinds
}

// HelmWatches make the Helm reconciler retry what its own watches cannot
// see: a Challenge waiting for a template when the template appears or
// changes, a Challenge refused by quota or budget when another instance of
// the participant goes away or fails before it was installed, the queued Challenges when a place frees, and a
// Challenge whose release record was deleted
// (unless a failed install's rollback deleted it: installFailing).
func HelmWatches(mgr ctrl.Manager, installFailing func(string) bool, pools *pool.Pools, queue *admission.Queue) reconciler.ControllerSetupFunc {
	cl := mgr.GetClient()
	return func(c reconciler.ControllerSetup) error {
		byTemplate := handler.TypedEnqueueRequestsFromMapFunc(func(ctx context.Context, t *ctfv1alpha1.ChallengeTemplate) []reconcile.Request {
			return challengeRequests(ctx, cl, everyChallenge, client.MatchingFields{controller.TemplateField: t.Name})
		})
		// Only its spec changes a render, and its hold whether its starts
		// wait: the rest of its status (counts, the pool's) changes with
		// every instance and would reconcile them all each time.
		if err := c.Watch(source.Kind(mgr.GetCache(), &ctfv1alpha1.ChallengeTemplate{}, byTemplate,
			predicate.Or[*ctfv1alpha1.ChallengeTemplate](predicate.TypedGenerationChangedPredicate[*ctfv1alpha1.ChallengeTemplate]{}, holdChanged))); err != nil {
			return err
		}
		siblings := handler.TypedEnqueueRequestsFromMapFunc(func(ctx context.Context, ch *ctfv1alpha1.Challenge) []reconcile.Request {
			return challengeRequests(ctx, cl, admission.MayWaitForBudget, client.MatchingFields{admission.ParticipantField: ch.Spec.Participant})
		})
		if err := c.Watch(source.Kind(mgr.GetCache(), &ctfv1alpha1.Challenge{}, siblings, admission.LeavesOrFails)); err != nil {
			return err
		}
		// A place freed lets the waiting ones move up at once
		// (admission.LeavesOrFails, Queue.Waiting).
		moveUp := handler.TypedEnqueueRequestsFromMapFunc(func(ctx context.Context, _ *ctfv1alpha1.Challenge) []reconcile.Request {
			return challengeRequests(ctx, cl, queue.Waiting(ctx, cl))
		})
		if err := c.Watch(source.Kind(mgr.GetCache(), &ctfv1alpha1.Challenge{}, moveUp, admission.LeavesOrFails)); err != nil {
			return err
		}
		// A claimant being deleted waits for its pooled instance to be gone.
		if pools != nil {
			claimant := handler.TypedEnqueueRequestsFromMapFunc(func(_ context.Context, pooled *ctfv1alpha1.Challenge) []reconcile.Request {
				if key, _, ok := pool.Claimant(pooled); ok {
					return []reconcile.Request{{NamespacedName: key}}
				}
				return nil
			})
			if err := c.Watch(source.Kind(mgr.GetCache(), &ctfv1alpha1.Challenge{}, claimant, deletions[*ctfv1alpha1.Challenge]())); err != nil {
				return err
			}
		}
		// A release record deleted by hand is re-created by the next
		// reconcile, which the deletion itself must trigger; not one Helm
		// pruned (superseded).
		// Only their metadata is held: a release record carries the whole
		// chart and manifest, megabytes per hundred instances.
		release := handler.TypedEnqueueRequestsFromMapFunc(unlessInstallFailing(func(ctx context.Context, s *metav1.PartialObjectMetadata) []reconcile.Request {
			if superseded(ctx, cl, s) {
				return nil
			}
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: s.Namespace, Name: s.Labels["name"]}}}
		}, installFailing))
		named := predicate.NewTypedPredicateFuncs(func(s *metav1.PartialObjectMetadata) bool { return s.Labels["name"] != "" })
		return c.Watch(source.Kind(mgr.GetCache(), action.RecordMetadata(), release, deletions[*metav1.PartialObjectMetadata](), named))
	}
}

// superseded tells whether the cache holds a later record of record's
// release: Helm deletes a release's oldest records beyond the history it
// keeps on every upgrade, failed ones included, and a reconcile at each of
// those deletions would retry a failing upgrade at once, forever, past the
// reconciler's backoff. The record Helm acts on is the latest.
func superseded(ctx context.Context, cl client.Reader, record *metav1.PartialObjectMetadata) bool {
	version, err := strconv.Atoi(record.Labels["version"])
	if err != nil {
		return false
	}
	records, err := action.ListRecords(ctx, cl, record.Namespace, record.Labels["name"], client.UnsafeDisableDeepCopy)
	if err != nil {
		return false
	}
	return slices.ContainsFunc(records, func(r metav1.PartialObjectMetadata) bool {
		later, err := strconv.Atoi(r.Labels["version"])
		return err == nil && later > version
	})
}

// holdChanged passes a template whose starts stop or start waiting
// (containment.Degraded, containment.Paused).
var holdChanged = predicate.TypedFuncs[*ctfv1alpha1.ChallengeTemplate]{
	UpdateFunc: func(e event.TypedUpdateEvent[*ctfv1alpha1.ChallengeTemplate]) bool {
		return containment.Degraded(e.ObjectOld) != containment.Degraded(e.ObjectNew) || containment.Paused(e.ObjectOld) != containment.Paused(e.ObjectNew)
	},
}

// challengeRequests lists the Challenges matching opts that keep selects.
func challengeRequests(ctx context.Context, cl client.Reader, keep func(*ctfv1alpha1.Challenge) bool, opts ...client.ListOption) []reconcile.Request {
	var list ctfv1alpha1.ChallengeList
	// Read-only, so the cache's own objects: a wave of teardowns asks for
	// the queued ones once per instance leaving, each time over all of them.
	if err := cl.List(ctx, &list, append(opts, client.UnsafeDisableDeepCopy)...); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing Challenges to requeue")
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		if ch := &list.Items[i]; keep(ch) {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(ch)})
		}
	}
	return out
}

func everyChallenge(*ctfv1alpha1.Challenge) bool { return true }

// ReleaseKinds returns an object of each kind a release renders and the
// cache holds by the instance label: those of a namespace of its own only
// with ownNamespace. (The flag Secret is not among them: Secrets are cached
// as release records.)
func ReleaseKinds(ownNamespace bool) []client.Object {
	kinds := []client.Object{&appsv1.Deployment{}, &corev1.Service{}, &corev1.ServiceAccount{},
		&networkingv1.NetworkPolicy{}, &networkingv1.Ingress{}}
	if ownNamespace {
		kinds = append(kinds, &corev1.Namespace{}, &corev1.ResourceQuota{}, &corev1.LimitRange{})
	}
	return kinds
}
