// Package challengepool holds the controllers of the warm pools: the one
// that keeps each template's pool of unclaimed Challenges at its target
// (and writes the template's status.pool), and the one that delivers a
// team's flags into the pooled Challenge it claimed.
package challengepool

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/controller"
	"github.com/challenge-operator/challenge-operator/internal/controller/challengetemplate"
	"github.com/challenge-operator/challenge-operator/internal/metrics"
	"github.com/challenge-operator/challenge-operator/internal/pool"
)

// Quiet is how long after the last team's Challenge the pools' Helm work
// (challenge.PoolHelmControllerName's) and their sizing wait, Patience at
// most: a burst of claims is served by the API server alone, and a steady
// stream of them does not starve the pools.
const (
	Quiet    = 2 * time.Second
	Patience = 10 * time.Second
)

// PoolReconciler keeps each pooled template's unclaimed instances at the
// demand's target, replaces those made for an older generation of the
// template, and deletes claimed ones whose claimant is gone (a claim that
// a crash cut short). It never touches an instance a team has claimed.
type PoolReconciler struct {
	Pools *pool.Pools
	// Status reads the template and writes its status.pool.
	Status *challengetemplate.TemplateStatusWriter
	// Live reads a claimant the cache does not hold, before its pooled
	// instance is deleted as an orphan: it may be too new to be cached.
	Live     client.Reader
	Recorder events.EventRecorder

	// announced is the last opening Event given per template name.
	announced sync.Map
}

// +kubebuilder:rbac:groups=ctf.challenge-operator.io,resources=challenges,verbs=create;delete

// Reconcile sizes one template's pool.
func (r *PoolReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	p := r.Pools
	// Its unclaimed instances are owned by it: when it is gone, the
	// garbage collector takes them.
	tmpl, err := r.Status.Read(ctx, req.NamespacedName, r.forget)
	if tmpl == nil || err != nil {
		return ctrl.Result{}, err
	}
	var list ctfv1alpha1.ChallengeList
	// Read-only: the cache's own objects, not a copy each (a burst of claims
	// reconciles the pool once per claim, each time over the whole pool).
	if err := p.Reader.List(ctx, &list, client.InNamespace(p.Namespace), client.MatchingLabels{ctfv1alpha1.PoolLabel: tmpl.Name}, client.UnsafeDisableDeepCopy); err != nil {
		return ctrl.Result{}, err
	}
	var target int32
	opening := pool.OpeningAt(tmpl.Spec.Pool, p.Demand.Clock())
	if tmpl.Spec.Pool != nil {
		target = opening.Target(p.Demand.Target(tmpl.Name, tmpl.Spec.Pool.Min, tmpl.Spec.Pool.Max))
	}
	plan := p.Plan(tmpl, list.Items, target)
	wait, since := p.Demand.Hold(sizingKey(tmpl), Quiet, Patience)
	if wait > 0 {
		// Teams are claiming: the pool's changes (its refill, chiefly) wait
		// for quiet as its Helm work does, and for as long at most. Made now,
		// they would load the API server every claim waits on, and a refill
		// could not be installed before then anyway. Meanwhile its status
		// says what it holds (and the opening it held, still announced).
		if plan.Standing != nil && tmpl.Status.Pool != nil {
			plan.Standing.Opening = tmpl.Status.Pool.Opening
		}
		return ctrl.Result{RequeueAfter: wait}, r.report(ctx, tmpl, plan.Standing)
	}
	for _, pooled := range plan.Claimed {
		if err := r.deleteOrphan(ctx, pooled); err != nil {
			return ctrl.Result{}, err
		}
	}
	if err := r.delete(ctx, tmpl, plan.Replace); err != nil {
		return ctrl.Result{}, err
	}
	if plan.Status == nil {
		return ctrl.Result{}, r.report(ctx, tmpl, nil)
	}
	if plan.Add > 0 {
		if err := r.create(ctx, tmpl, plan.Add, since); err != nil {
			return ctrl.Result{}, err
		}
	}
	if err := r.delete(ctx, tmpl, plan.Shrink); err != nil {
		return ctrl.Result{}, err
	}
	var held *metav1.Time
	if tmpl.Status.Pool != nil {
		held = tmpl.Status.Pool.Opening
	}
	plan.Status.Opening = opening.Held()
	if err := r.report(ctx, tmpl, plan.Status); err != nil {
		return ctrl.Result{}, err
	}
	// Announced once the status holds the window, so that a failed write
	// announces it again rather than never.
	r.announce(tmpl, opening.Announce(held, target))
	return ctrl.Result{RequeueAfter: soonest(plan.RequeueAfter, opening.Next)}, nil
}

// announce gives an opening's Event, once: the cache may not show the
// status that recorded the window's edge to the next reconcile yet.
func (r *PoolReconciler) announce(tmpl *ctfv1alpha1.ChallengeTemplate, a *pool.Announcement) {
	if a == nil {
		return
	}
	said := fmt.Sprint(a.Reason, " ", a.Of.Unix())
	if last, ok := r.announced.Load(tmpl.Name); ok && last == said {
		return
	}
	r.announced.Store(tmpl.Name, said)
	r.Recorder.Eventf(tmpl, nil, corev1.EventTypeNormal, a.Reason, "Opening", "%s", a.Note)
}

// soonest is the shorter of two waits, 0 meaning none.
func soonest(a, b time.Duration) time.Duration {
	if a == 0 || (b != 0 && b < a) {
		return b
	}
	return a
}

// sizingKey names the sizing of tmpl's pool among the pools' work held
// back while teams claim (pool.Demand.Hold).
func sizingKey(tmpl *ctfv1alpha1.ChallengeTemplate) string { return "pool sizing " + tmpl.Name }

// report writes status (nil: no pool) into tmpl's status.pool and the pool metrics.
func (r *PoolReconciler) report(ctx context.Context, tmpl *ctfv1alpha1.ChallengeTemplate, status *ctfv1alpha1.PoolStatus) error {
	if status == nil {
		metrics.ForgetPool(tmpl.Name)
	} else {
		metrics.ObservePool(tmpl.Name, status.Size, status.Ready, status.Target)
	}
	return r.Status.Set(ctx, tmpl, func(st *ctfv1alpha1.ChallengeTemplateStatus) { st.Pool = status })
}

// deleteOrphan deletes a claimed pooled instance whose claimant is gone.
// Its claimant deletes it on its way out; only a claim whose claimant went
// away before its finalizer held it (a crash between claim and status)
// is left for this.
func (r *PoolReconciler) deleteOrphan(ctx context.Context, pooled *ctfv1alpha1.Challenge) error {
	key, uid, _ := pool.Claimant(pooled)
	claimant := &ctfv1alpha1.Challenge{}
	err := r.Pools.Reader.Get(ctx, key, claimant)
	if apierrors.IsNotFound(err) {
		err = r.Live.Get(ctx, key, claimant)
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	var found *ctfv1alpha1.Challenge
	if err == nil {
		found = claimant
	}
	if !pool.Orphaned(uid, found) {
		return nil
	}
	ctrl.LoggerFrom(ctx).Info("deleting a pooled instance whose claimant is gone", "pooled", client.ObjectKeyFromObject(pooled), "claimant", key)
	return client.IgnoreNotFound(r.Pools.Client.Delete(ctx, pooled.DeepCopy(), client.Preconditions{UID: &pooled.UID}))
}

// create adds n unclaimed instances to tmpl's pool. A refill held back
// since then has waited for quiet already: its installs wait no longer in all.
func (r *PoolReconciler) create(ctx context.Context, tmpl *ctfv1alpha1.ChallengeTemplate, n int32, since time.Time) error {
	for range n {
		pooled := pool.New(tmpl, r.Pools.Namespace)
		if err := r.Pools.Client.Create(ctx, pooled); err != nil {
			return fmt.Errorf("adding to the pool of %s: %w", tmpl.Name, err)
		}
		r.Pools.Demand.Waited(client.ObjectKeyFromObject(pooled).String(), since)
	}
	r.Recorder.Eventf(tmpl, nil, corev1.EventTypeNormal, pool.ReasonRefilled, "Refill", "added %d pooled instances in %s", n, r.Pools.Namespace)
	return nil
}

// delete removes a batch of unclaimed pooled instances, each only if it is
// still unclaimed: the update of a claim changes its resourceVersion.
func (r *PoolReconciler) delete(ctx context.Context, tmpl *ctfv1alpha1.ChallengeTemplate, batch pool.Removal) error {
	if len(batch.Pooled) == 0 {
		return nil
	}
	for _, ch := range batch.Pooled {
		err := r.Pools.Client.Delete(ctx, ch.DeepCopy(), client.Preconditions{UID: &ch.UID, ResourceVersion: &ch.ResourceVersion})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("deleting pooled instance %s: %w", ch.Name, err)
		}
	}
	r.Recorder.Eventf(tmpl, nil, corev1.EventTypeNormal, batch.Reason, "Resize", batch.Note, len(batch.Pooled))
	return nil
}

// forget drops what is kept of the template name, gone.
func (r *PoolReconciler) forget(name string) {
	metrics.ForgetPool(name)
	r.announced.Delete(name)
}

// SetupWithManager watches templates, their pooled instances and their demand.
func (r *PoolReconciler) SetupWithManager(mgr ctrl.Manager) error {
	demand := make(chan event.GenericEvent, 1024)
	r.Pools.Demand.Changed = func(template string) {
		select {
		case demand <- event.GenericEvent{Object: &ctfv1alpha1.ChallengeTemplate{ObjectMeta: metav1.ObjectMeta{Name: template}}}:
		default: // full: the template is queued many times over already
		}
	}
	// A claim changes its pooled instance and the demand at once: both
	// settle, so that a burst of claims sizes the pool once a second, not
	// once a claim, each time over the whole pool.
	return ctrl.NewControllerManagedBy(mgr).
		Named("challenge-pool").
		// Its spec only: the template's status changes with every instance.
		For(&ctfv1alpha1.ChallengeTemplate{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&ctfv1alpha1.Challenge{}, controller.Settled(r.templateOfPooled, controller.TemplateSettle)).
		WatchesRawSource(source.Channel(demand, controller.Settled(named, controller.TemplateSettle))).
		Complete(r)
}

// named maps a template to its own request.
func named(_ context.Context, obj client.Object) []reconcile.Request {
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: obj.GetName()}}}
}

// templateOfPooled maps a pooled instance to its template.
func (r *PoolReconciler) templateOfPooled(_ context.Context, obj client.Object) []reconcile.Request {
	ch, ok := obj.(*ctfv1alpha1.Challenge)
	if !ok || !r.Pools.IsPooled(ch) {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: ch.Spec.Template}}}
}
