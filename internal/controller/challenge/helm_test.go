package challenge

import (
	"context"
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/controller/challengepool"
	"github.com/challenge-operator/challenge-operator/internal/pool"
)

// TestReleaseInputChanged: only what can change a Challenge's release starts
// a Helm reconcile; its status writes never do.
func TestReleaseInputChanged(t *testing.T) {
	base := func() *ctfv1alpha1.Challenge {
		return &ctfv1alpha1.Challenge{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ctf", Generation: 1,
			Labels: map[string]string{"team": "a"}, Annotations: map[string]string{"note": "x"}, Finalizers: []string{"uninstall-helm-release"}}}
	}
	now := metav1.Now()
	tests := []struct {
		name   string
		change func(c *ctfv1alpha1.Challenge)
		want   bool
	}{
		{"nothing", func(*ctfv1alpha1.Challenge) {}, false},
		{"a status write", func(c *ctfv1alpha1.Challenge) { c.Status.Phase = ctfv1alpha1.PhaseRunning }, false},
		{"a finalizer added (the reconciler's own, before an install)", func(c *ctfv1alpha1.Challenge) {
			c.Finalizers = append(c.Finalizers, "another")
		}, false},
		{"a new generation", func(c *ctfv1alpha1.Challenge) { c.Generation = 2 }, true},
		{"deleted", func(c *ctfv1alpha1.Challenge) { c.DeletionTimestamp = &now }, true},
		{"a finalizer removed", func(c *ctfv1alpha1.Challenge) { c.Finalizers = nil }, true},
		{"a label changed", func(c *ctfv1alpha1.Challenge) { c.Labels["team"] = "b" }, true},
		{"an annotation added", func(c *ctfv1alpha1.Challenge) { c.Annotations["more"] = "y" }, true},
	}
	p := releaseInputChanged()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old, changed := base(), base()
			tt.change(changed)
			NewWithT(t).Expect(p.Update(event.UpdateEvent{ObjectOld: old, ObjectNew: changed})).To(Equal(tt.want))
		})
	}
	NewWithT(t).Expect(p.Generic(event.GenericEvent{Object: base()})).To(BeFalse(), "no periodic resync of every release")
}

// TestDrifted: a release's object deleted, or changed in what the release
// set (its spec, counted by generation where the kind counts one, or its
// labels), is drift; status and the annotations controllers add are not.
func TestDrifted(t *testing.T) {
	svc := func() *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ctf", ResourceVersion: "1", Labels: map[string]string{"a": "b"}},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}
	}
	withGeneration := func(o client.Object) client.Object { o.SetGeneration(3); return o }
	tests := []struct {
		name     string
		old, new client.Object
		want     bool
	}{
		{"nothing but the resourceVersion", svc(), func() client.Object { s := svc(); s.ResourceVersion = "2"; return s }(), false},
		{"status (a load balancer's address)", svc(), func() client.Object {
			s := svc()
			s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "192.0.2.1"}}
			return s
		}(), false},
		{"an annotation a controller added", svc(), func() client.Object { s := svc(); s.Annotations = map[string]string{"x": "y"}; return s }(), false},
		{"the spec of a kind without generations", svc(), func() client.Object { s := svc(); s.Spec.Ports[0].Port = 81; return s }(), true},
		{"a label", svc(), func() client.Object { s := svc(); s.Labels["a"] = "c"; return s }(), true},
		{"being deleted", svc(), func() client.Object { s := svc(); now := metav1.Now(); s.DeletionTimestamp = &now; return s }(), true},
		{"the same generation, other fields", withGeneration(svc()), func() client.Object {
			s := withGeneration(svc()).(*corev1.Service)
			s.Spec.Ports[0].Port = 81
			return s
		}(), false},
		{"a new generation", withGeneration(svc()), func() client.Object { s := withGeneration(svc()); s.SetGeneration(4); return s }(), true},
	}
	p := drifted()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(p.Update(event.UpdateEvent{ObjectOld: tt.old, ObjectNew: tt.new})).To(Equal(tt.want))
		})
	}
	g := NewWithT(t)
	g.Expect(p.Delete(event.DeleteEvent{Object: svc()})).To(BeTrue(), "a deleted object is drift")
	g.Expect(p.Create(event.CreateEvent{Object: svc()})).To(BeFalse(), "the release's own creates are not")
}

// TestFinalizerRemoved: a finalizer of the old object missing from the new
// one starts a Helm reconcile (the reconciler puts its own back); adding or
// reordering finalizers does not.
func TestFinalizerRemoved(t *testing.T) {
	withFinalizers := func(f ...string) client.Object {
		return &ctfv1alpha1.Challenge{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ctf", Finalizers: f}}
	}
	tests := []struct {
		name     string
		old, new []string
		want     bool
	}{
		{"none before or after", nil, nil, false},
		{"the same", []string{"a", "b"}, []string{"a", "b"}, false},
		{"one added", []string{"a"}, []string{"a", "b"}, false},
		{"the first added", nil, []string{"a"}, false},
		{"reordered", []string{"a", "b"}, []string{"b", "a"}, false},
		{"one removed", []string{"a", "b"}, []string{"a"}, true},
		{"all removed", []string{"a", "b"}, nil, true},
		{"one replaced by another", []string{"a"}, []string{"b"}, true},
		{"a duplicate dropped, the finalizer kept", []string{"a", "a"}, []string{"a"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(finalizerRemoved(withFinalizers(tt.old...), withFinalizers(tt.new...))).To(Equal(tt.want))
		})
	}
}

// enqueued is one request added to a queue, with its priority (nil: none).
type enqueued struct {
	req      reconcile.Request
	priority *int
}

// recordingPriorityQueue records what is added to it; any other use of the
// queue (the embedded nil interface) panics.
type recordingPriorityQueue struct {
	priorityqueue.PriorityQueue[reconcile.Request]
	added []enqueued
}

func (q *recordingPriorityQueue) AddWithOpts(o priorityqueue.AddOpts, items ...reconcile.Request) {
	for _, item := range items {
		q.added = append(q.added, enqueued{req: item, priority: o.Priority})
	}
}

func (q *recordingPriorityQueue) Add(item reconcile.Request) {
	q.added = append(q.added, enqueued{req: item})
}

// recordingQueue is a rate-limiting queue without priorities.
type recordingQueue struct {
	workqueue.TypedRateLimitingInterface[reconcile.Request]
	added []enqueued
}

func (q *recordingQueue) Add(item reconcile.Request) {
	q.added = append(q.added, enqueued{req: item})
}

// TestInstallsFirst: the priority each Challenge event enqueues with. A
// team's install or upgrade goes first, teardowns after it, and what was
// merely listed at start-up and the pools' own work last.
func TestInstallsFirst(t *testing.T) {
	deleting := metav1.NewTime(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	challenge := func(namespace string, pooled, leaving bool) client.Object {
		ch := &ctfv1alpha1.Challenge{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: namespace}}
		if pooled {
			ch.Labels = map[string]string{ctfv1alpha1.PoolLabel: "web"}
		}
		if leaving {
			ch.DeletionTimestamp = &deleting
		}
		return ch
	}
	const poolNS = "ctf-pool"
	pools := &pool.Pools{Namespace: poolNS}
	type on int
	const (
		onCreate on = iota
		onUpdate
		onDelete
		onGeneric
	)
	tests := []struct {
		name          string
		pools         *pool.Pools
		on            on
		obj           client.Object
		inInitialList bool
		want          int
	}{
		{"a team's new Challenge", pools, onCreate, challenge("team-a", false, false), false, priorityRelease},
		{"a team's Challenge listed at start-up", pools, onCreate, challenge("team-a", false, false), true, handler.LowPriority},
		{"a leaving Challenge listed at start-up", pools, onCreate, challenge("team-a", false, true), true, handler.LowPriority},
		{"a new pooled instance (a refill)", pools, onCreate, challenge(poolNS, true, false), false, handler.LowPriority},
		{"a new leaving pooled instance", pools, onCreate, challenge(poolNS, true, true), false, handler.LowPriority},
		{"a created Challenge already leaving", pools, onCreate, challenge("team-a", false, true), false, priorityTeardown},
		{"an unlabelled Challenge in the pool namespace", pools, onCreate, challenge(poolNS, false, false), false, priorityRelease},
		{"a pool-labelled Challenge in a team's namespace", pools, onCreate, challenge("team-a", true, false), false, priorityRelease},
		{"a pool-labelled Challenge without pools", nil, onCreate, challenge(poolNS, true, false), false, priorityRelease},
		{"a team's Challenge changed", pools, onUpdate, challenge("team-a", false, false), false, priorityRelease},
		{"a team's Challenge being deleted", pools, onUpdate, challenge("team-a", false, true), false, priorityTeardown},
		{"a pooled instance changed (a claim's relabelling)", pools, onUpdate, challenge(poolNS, true, false), false, handler.LowPriority},
		{"a pooled instance being deleted", pools, onUpdate, challenge(poolNS, true, true), false, priorityTeardown},
		{"a team's Challenge deleted", pools, onDelete, challenge("team-a", false, true), false, priorityTeardown},
		{"a pooled instance deleted", pools, onDelete, challenge(poolNS, true, true), false, priorityTeardown},
		{"a generic event", pools, onGeneric, challenge("team-a", false, false), false, priorityTeardown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, q := installsFirst{pools: tt.pools}, &recordingPriorityQueue{}
			ctx := context.Background()
			switch tt.on {
			case onCreate:
				h.Create(ctx, event.CreateEvent{Object: tt.obj, IsInInitialList: tt.inInitialList}, q)
			case onUpdate:
				old := tt.obj.DeepCopyObject().(client.Object)
				old.SetDeletionTimestamp(nil)
				h.Update(ctx, event.UpdateEvent{ObjectOld: old, ObjectNew: tt.obj}, q)
			case onDelete:
				h.Delete(ctx, event.DeleteEvent{Object: tt.obj}, q)
			case onGeneric:
				h.Generic(ctx, event.GenericEvent{Object: tt.obj}, q)
			}
			want := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: tt.obj.GetNamespace(), Name: "web"}}
			NewWithT(t).Expect(q.added).To(Equal([]enqueued{{req: want, priority: &tt.want}}))
		})
	}
	t.Run("a queue without priorities gets the request alone", func(t *testing.T) {
		q := &recordingQueue{}
		installsFirst{pools: pools}.Create(context.Background(), event.CreateEvent{Object: challenge("team-a", false, false)}, q)
		NewWithT(t).Expect(q.added).To(Equal([]enqueued{{req: reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "team-a", Name: "web"}}}}))
	})
}

// TestWhenQuiet: the pools' Helm work is held back while teams ask for
// instances, until challengepool.Quiet has passed since the last one, or until the
// request has waited challengepool.Patience; each request's wait is its own, and a
// request run waits afresh the next time. The demand's clock is the test's.
func TestWhenQuiet(t *testing.T) {
	// step is one thing that happens, in order: the clock moves on by
	// advance, teams ask for demand instances, then the request named is
	// reconciled and is run (wantRun) or held back for wantRequeue.
	type step struct {
		advance     time.Duration
		demand      int
		req         string
		wantRun     bool
		wantRequeue time.Duration
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"no demand ever: run at once", []step{{req: "a", wantRun: true}}},
		{"right after a team's request: held back for challengepool.Quiet", []step{{demand: 1, req: "a", wantRequeue: challengepool.Quiet}}},
		{"held back for what is left of challengepool.Quiet", []step{
			{demand: 1, req: "a", wantRequeue: challengepool.Quiet},
			{advance: 1500 * time.Millisecond, req: "a", wantRequeue: 500 * time.Millisecond},
		}},
		{"run once quiet", []step{
			{demand: 1, req: "a", wantRequeue: challengepool.Quiet},
			{advance: challengepool.Quiet, req: "a", wantRun: true},
		}},
		{"a steady stream holds it back challengepool.Patience at most", []step{
			{demand: 1, req: "a", wantRequeue: challengepool.Quiet},
			{advance: 1 * time.Second, demand: 1, req: "a", wantRequeue: challengepool.Quiet},
			{advance: 7 * time.Second, demand: 1, req: "a", wantRequeue: challengepool.Quiet},
			{advance: 1 * time.Second, demand: 1, req: "a", wantRequeue: time.Second}, // 9 s waited: 1 s of patience left
			{advance: 1 * time.Second, demand: 1, req: "a", wantRun: true},            // 10 s waited
		}},
		{"each request waits from when it was first held back", []step{
			{demand: 1, req: "a", wantRequeue: challengepool.Quiet},
			{advance: 1 * time.Second, demand: 1, req: "a", wantRequeue: challengepool.Quiet},
			{advance: 8 * time.Second, demand: 1, req: "b", wantRequeue: challengepool.Quiet},
			{req: "a", wantRequeue: time.Second},
			{advance: 1 * time.Second, demand: 1, req: "a", wantRun: true},
			{req: "b", wantRequeue: challengepool.Quiet},
		}},
		{"a request run waits afresh when it comes back", []step{
			{demand: 1, req: "a", wantRequeue: challengepool.Quiet},
			{advance: 9 * time.Second, demand: 1, req: "a", wantRequeue: time.Second},
			{advance: 1 * time.Second, demand: 1, req: "a", wantRun: true},
			{advance: 1 * time.Second, demand: 1, req: "a", wantRequeue: challengepool.Quiet},
		}},
		{"a request run when quiet forgets its wait", []step{
			{demand: 1, req: "a", wantRequeue: challengepool.Quiet},
			{advance: 9 * time.Second, req: "a", wantRun: true},
			{advance: 5 * time.Second, demand: 1, req: "a", wantRequeue: challengepool.Quiet},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
			demand := &pool.Demand{Now: func() time.Time { return now }}
			var ran []string
			inner := reconcile.Func(func(_ context.Context, req reconcile.Request) (reconcile.Result, error) {
				ran = append(ran, req.Name)
				return reconcile.Result{}, nil
			})
			r := whenQuiet(inner, demand)
			for i, s := range tt.steps {
				now = now.Add(s.advance)
				for range s.demand {
					demand.Add("web")
				}
				ran = nil
				res, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ctf-pool", Name: s.req}})
				g.Expect(err).NotTo(HaveOccurred())
				if s.wantRun {
					g.Expect(ran).To(Equal([]string{s.req}), "step %d runs", i)
				} else {
					g.Expect(ran).To(BeEmpty(), "step %d is held back", i)
					g.Expect(res).To(Equal(reconcile.Result{RequeueAfter: s.wantRequeue}), "step %d", i)
				}
			}
		})
	}
	t.Run("what the reconciler returns is returned as it is", func(t *testing.T) {
		failed := errors.New("install failed")
		r := whenQuiet(reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
			return reconcile.Result{RequeueAfter: time.Hour}, failed
		}), &pool.Demand{})
		res, err := r.Reconcile(context.Background(), reconcile.Request{})
		NewWithT(t).Expect(err).To(MatchError(failed))
		NewWithT(t).Expect(res).To(Equal(reconcile.Result{RequeueAfter: time.Hour}))
	})
	t.Run("without a demand nothing is held back", func(t *testing.T) {
		ran := false
		r := whenQuiet(reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
			ran = true
			return reconcile.Result{}, nil
		}), nil)
		_, err := r.Reconcile(context.Background(), reconcile.Request{})
		NewWithT(t).Expect(err).NotTo(HaveOccurred())
		NewWithT(t).Expect(ran).To(BeTrue())
	})
}
