package controller

import (
	"context"
	"time"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// TemplateSettle is how long a template's own reconcile waits after a
// change to one of its instances, gathering the changes that follow: a
// burst of 500 starts or claims changes its instances thousands of times,
// and each reconcile lists all of them. A template's status is that much
// behind its instances at most; an instance's own status never waits.
const TemplateSettle = time.Second

// Settled enqueues the requests mapFn gives for an event after settle, the
// earliest of those pending winning (both of controller-runtime's queues
// keep an item once, at its earliest time): a template is reconciled at
// most once per settle however many of its instances change meanwhile.
func Settled(mapFn handler.MapFunc, settle time.Duration) handler.EventHandler {
	mapped := handler.EnqueueRequestsFromMapFunc(mapFn)
	delay := func(q workqueue.TypedRateLimitingInterface[reconcile.Request]) delayedQueue {
		return delayedQueue{TypedRateLimitingInterface: q, after: settle}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			mapped.Create(ctx, e, delay(q))
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			mapped.Update(ctx, e, delay(q))
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			mapped.Delete(ctx, e, delay(q))
		},
		GenericFunc: func(ctx context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			mapped.Generic(ctx, e, delay(q))
		},
	}
}

// delayedQueue adds after a delay what its handler adds. It hides the
// priority queue's AddWithOpts, so that the handler uses Add.
type delayedQueue struct {
	workqueue.TypedRateLimitingInterface[reconcile.Request]
	after time.Duration
}

func (q delayedQueue) Add(r reconcile.Request) { q.AddAfter(r, q.after) }
