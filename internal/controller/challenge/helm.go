package challenge

import (
	"context"
	"slices"
	"time"

	"github.com/operator-framework/helm-operator-plugins/pkg/reconciler"
	"golang.org/x/time/rate"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/controller"
	"github.com/challenge-operator/challenge-operator/internal/controller/challengepool"
	"github.com/challenge-operator/challenge-operator/internal/pool"
)

// HelmControllerName names the controller that runs the Helm reconciler (and
// its metrics: controller_runtime_reconcile_total{controller=...}).
const HelmControllerName = "challenge-controller"

// PoolHelmControllerName names the controller that runs the Helm reconciler
// for pooled instances: their installs (refills) and upgrades (the
// relabelling of a claim) have workers of their own, so that no team's
// claim or install ever waits for a worker busy with a pool.
const PoolHelmControllerName = "challenge-pool-controller"

// helmController is one controller running the Helm reconciler, for the
// Challenges keep selects.
type helmController struct {
	name        string
	concurrency int
	keep        func(reconcile.Request) bool
	// reconciler wraps the Helm reconciler; nil runs it as it is.
	reconciler reconcile.Reconciler
}

// setupHelmController runs the Helm reconciler under a controller of our own
// instead of the one its SetupWithManager builds, so that what starts a Helm
// reconcile is chosen here. That one enqueues on every event of the primary
// kind and of every release record, and watches dependents through a post-hook:
// each status write and each release write start another full reconcile (a
// server-side dry-run upgrade of every object), a feedback loop that runs for
// minutes after a burst. Here a Helm reconcile starts only for what can change
// the release: a new generation, labels or annotations, a deletion or a
// finalizer removed from the Challenge; its template changing; a sibling leaving
// (quota); its release record deleted; or an object of the release deleted or
// changed in its spec (drift). Status-only changes go to the status controller.
func setupHelmController(mgr ctrl.Manager, r reconcile.Reconciler, hc helmController, extra reconciler.ControllerSetupFunc, namespacePerInstance bool, installFailing func(string) bool, pools *pool.Pools) error {
	run := r
	if hc.reconciler != nil {
		run = hc.reconciler
	}
	c, err := ctrlcontroller.New(hc.name, mgr, ctrlcontroller.Options{
		Reconciler:              run,
		MaxConcurrentReconciles: hc.concurrency,
		RecoverPanic:            ptr.To(true),
		RateLimiter:             helmRateLimiter(),
		NewQueue:                keptQueue(mgr, hc.keep),
	})
	if err != nil {
		return err
	}
	// The informer the reconciler reads Challenges from (typedChallenges):
	// a reconcile never misses the object that started it.
	if err := c.Watch(source.Kind(mgr.GetCache(), client.Object(&ctfv1alpha1.Challenge{}), installsFirst{pools: pools}, releaseInputChanged())); err != nil {
		return err
	}
	for _, obj := range ReleaseKinds(namespacePerInstance) {
		if err := c.Watch(source.Kind(mgr.GetCache(), obj,
			handler.EnqueueRequestsFromMapFunc(unlessInstallFailing(controller.ChallengeOfInstanceObject, installFailing)), drifted())); err != nil {
			return err
		}
	}
	// A teardown waits for the pods and ReplicaSets its uninstall left to
	// the garbage collector: their deletions bring it back, not a backoff.
	for _, obj := range []client.Object{&corev1.Pod{}, &appsv1.ReplicaSet{}} {
		if err := c.Watch(source.Kind(mgr.GetCache(), obj,
			handler.EnqueueRequestsFromMapFunc(tearingDown(mgr.GetClient())), deletions[client.Object]())); err != nil {
			return err
		}
	}
	return extra(c)
}

// SetupHelmControllers adds to mgr the controllers that run helm, the Helm
// reconciler (helmControllers), each with the watches of
// setupHelmController and extra.
func SetupHelmControllers(mgr ctrl.Manager, helm reconcile.Reconciler, concurrency int, extra reconciler.ControllerSetupFunc, namespacePerInstance bool, installFailing func(string) bool, pools *pool.Pools) error {
	for _, hc := range helmControllers(helm, concurrency, pools) {
		if err := setupHelmController(mgr, helm, hc, extra, namespacePerInstance, installFailing, pools); err != nil {
			return err
		}
	}
	return nil
}

// helmControllers are the controllers that run the Helm reconciler: one for
// every Challenge, or, with pools, one for the teams' and one with a quarter
// of the workers for the pooled instances (the pool namespace's).
func helmControllers(r reconcile.Reconciler, concurrency int, pools *pool.Pools) []helmController {
	if pools == nil {
		return []helmController{{name: HelmControllerName, concurrency: concurrency}}
	}
	pooled := func(req reconcile.Request) bool { return pools.Holds(req.Namespace) }
	return []helmController{
		{name: HelmControllerName, concurrency: concurrency, keep: func(req reconcile.Request) bool { return !pooled(req) }},
		{name: PoolHelmControllerName, concurrency: max(1, concurrency/4), keep: pooled, reconciler: whenQuiet(r, pools.Demand)},
	}
}

// whenQuiet runs r once no team has asked for an instance for challengepool.Quiet, or
// once a request has waited challengepool.Patience (pool.Demand.Hold): a refill's
// install, a claim's relabelling and a pooled instance's teardown all load
// the API server that claims wait on.
func whenQuiet(r reconcile.Reconciler, demand *pool.Demand) reconcile.Reconciler {
	return reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		if wait, _ := demand.Hold(req.String(), challengepool.Quiet, challengepool.Patience); wait > 0 {
			return reconcile.Result{RequeueAfter: wait}, nil
		}
		return r.Reconcile(ctx, req)
	})
}

// keptQueue makes a controller's queue, controller-runtime's priority queue,
// taking only the requests keep selects (all when nil): every watch of both
// Helm controllers maps events alike, and each keeps its own.
func keptQueue(mgr ctrl.Manager, keep func(reconcile.Request) bool) func(string, workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
	return func(name string, rl workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
		q := priorityqueue.New(name, func(o *priorityqueue.Opts[reconcile.Request]) {
			o.Log = mgr.GetLogger().WithValues("controller", name)
			o.RateLimiter = rl
		})
		if keep == nil {
			return q
		}
		return &filteredQueue{PriorityQueue: q, keep: keep}
	}
}

// filteredQueue drops the requests keep does not select.
type filteredQueue struct {
	priorityqueue.PriorityQueue[reconcile.Request]
	keep func(reconcile.Request) bool
}

func (q *filteredQueue) Add(item reconcile.Request) {
	if q.keep(item) {
		q.PriorityQueue.Add(item)
	}
}

func (q *filteredQueue) AddWithOpts(o priorityqueue.AddOpts, items ...reconcile.Request) {
	if items = slices.DeleteFunc(items, func(r reconcile.Request) bool { return !q.keep(r) }); len(items) > 0 {
		q.PriorityQueue.AddWithOpts(o, items...)
	}
}

func (q *filteredQueue) AddAfter(item reconcile.Request, d time.Duration) {
	if q.keep(item) {
		q.PriorityQueue.AddAfter(item, d)
	}
}

func (q *filteredQueue) AddRateLimited(item reconcile.Request) {
	if q.keep(item) {
		q.PriorityQueue.AddRateLimited(item)
	}
}

// helmRateLimiter spaces a Challenge's failed reconciles: from 100 ms,
// doubling, to 5 minutes (client-go's default starts at 5 ms, and a failed
// install creates and deletes every object of the release each time), under
// client-go's overall bucket of 10 per second.
func helmRateLimiter() workqueue.TypedRateLimiter[reconcile.Request] {
	return workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](100*time.Millisecond, 5*time.Minute),
		&workqueue.TypedBucketRateLimiter[reconcile.Request]{Limiter: rate.NewLimiter(rate.Limit(10), 100)},
	)
}

// unlessInstallFailing drops the requests for Challenges whose install is
// running or failed last: what the rollback of a failed install deletes is
// no reason to try again at once (see action.ClientGetter.InstallFailing).
func unlessInstallFailing[T any](mapFunc func(context.Context, T) []reconcile.Request, installFailing func(string) bool) func(context.Context, T) []reconcile.Request {
	return func(ctx context.Context, obj T) []reconcile.Request {
		reqs := mapFunc(ctx, obj)
		return slices.DeleteFunc(reqs, func(r reconcile.Request) bool { return installFailing(r.String()) })
	}
}

// +kubebuilder:rbac:groups=apps,resources=replicasets,verbs=list;watch

// tearingDown maps an object of an instance to its Challenge if that is
// being deleted.
func tearingDown(cl client.Reader) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		reqs := controller.ChallengeOfInstanceObject(ctx, obj)
		if len(reqs) == 0 {
			return nil
		}
		ch := &ctfv1alpha1.Challenge{}
		if err := cl.Get(ctx, reqs[0].NamespacedName, ch); err != nil || ch.DeletionTimestamp.IsZero() {
			return nil
		}
		return reqs
	}
}

// deletions passes delete events only.
func deletions[T client.Object]() predicate.TypedFuncs[T] {
	return predicate.TypedFuncs[T]{
		CreateFunc:  func(event.TypedCreateEvent[T]) bool { return false },
		UpdateFunc:  func(event.TypedUpdateEvent[T]) bool { return false },
		GenericFunc: func(event.TypedGenericEvent[T]) bool { return false },
	}
}

// installsFirst enqueues a Challenge with a priority: one waiting for its
// install or upgrade goes ahead of teardowns, so that a wave of deletions or
// expiries never makes a participant wait for an instance; Challenges merely
// listed at start-up, and new pooled instances (a refill must never hold a
// team's claim or install back), go last. (controller-runtime's priority
// queue keeps an item's priority when it is requeued, so a teardown stays behind.)
type installsFirst struct{ pools *pool.Pools }

// Priorities of installsFirst.
const (
	priorityRelease  = 1
	priorityTeardown = 0
)

func (i installsFirst) Create(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	switch {
	case e.IsInInitialList, i.pooled(e.Object):
		enqueue(q, e.Object, handler.LowPriority)
	case e.Object.GetDeletionTimestamp() != nil:
		enqueue(q, e.Object, priorityTeardown)
	default:
		enqueue(q, e.Object, priorityRelease)
	}
}

// pooled tells whether obj is a pooled instance.
func (i installsFirst) pooled(obj client.Object) bool {
	return i.pools.Holds(obj.GetNamespace()) && obj.GetLabels()[ctfv1alpha1.PoolLabel] != ""
}

func (i installsFirst) Update(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	switch {
	case e.ObjectNew.GetDeletionTimestamp() != nil:
		enqueue(q, e.ObjectNew, priorityTeardown)
	case i.pooled(e.ObjectNew):
		// A claimed one is already serving its team: its relabelling waits too.
		enqueue(q, e.ObjectNew, handler.LowPriority)
	default:
		enqueue(q, e.ObjectNew, priorityRelease)
	}
}

func (installsFirst) Delete(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	enqueue(q, e.Object, priorityTeardown)
}

func (installsFirst) Generic(_ context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	enqueue(q, e.Object, priorityTeardown)
}

func enqueue(q workqueue.TypedRateLimitingInterface[reconcile.Request], obj client.Object, priority int) {
	req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(obj)}
	if pq, ok := q.(priorityqueue.PriorityQueue[reconcile.Request]); ok {
		pq.AddWithOpts(priorityqueue.AddOpts{Priority: &priority}, req)
		return
	}
	q.Add(req)
}

// releaseInputChanged passes the Challenge events that can change its release.
func releaseInputChanged() predicate.Predicate {
	return predicate.Funcs{
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, n := e.ObjectOld, e.ObjectNew
			return o.GetGeneration() != n.GetGeneration() ||
				!o.GetDeletionTimestamp().Equal(n.GetDeletionTimestamp()) ||
				finalizerRemoved(o, n) ||
				!equality.Semantic.DeepEqual(o.GetLabels(), n.GetLabels()) ||
				!equality.Semantic.DeepEqual(o.GetAnnotations(), n.GetAnnotations())
		},
	}
}

// finalizerRemoved tells whether a finalizer of old is missing from new: the
// Helm reconciler puts its own back. Finalizers it adds itself (before each
// install) need no second reconcile.
func finalizerRemoved(old, new client.Object) bool {
	for _, f := range old.GetFinalizers() {
		if !slices.Contains(new.GetFinalizers(), f) {
			return true
		}
	}
	return false
}

// drifted passes deletions of a release's objects and changes to what the
// release sets in them: their spec (a new generation where the kind counts
// them, else anything but status and bookkeeping) or their labels. Status
// changes, and the annotations controllers add, are not drift.
func drifted() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return true },
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, n := e.ObjectOld, e.ObjectNew
			if !equality.Semantic.DeepEqual(o.GetLabels(), n.GetLabels()) || !o.GetDeletionTimestamp().Equal(n.GetDeletionTimestamp()) {
				return true
			}
			if n.GetGeneration() > 0 {
				return o.GetGeneration() != n.GetGeneration()
			}
			return !equality.Semantic.DeepEqual(withoutBookkeeping(o), withoutBookkeeping(n))
		},
	}
}

// withoutBookkeeping is obj as a map without status and the metadata the API
// server and controllers maintain.
func withoutBookkeeping(obj client.Object) map[string]any {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil
	}
	delete(m, "status")
	if meta, ok := m["metadata"].(map[string]any); ok {
		for _, k := range []string{"resourceVersion", "managedFields", "annotations", "generation"} {
			delete(meta, k)
		}
	}
	return m
}
