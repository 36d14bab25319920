package controller

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
)

// delayRecordingQueue records how its handler adds requests.
type delayRecordingQueue struct {
	workqueue.TypedRateLimitingInterface[reconcile.Request]
	now   []reconcile.Request
	after map[reconcile.Request][]time.Duration
}

func (q *delayRecordingQueue) Add(r reconcile.Request) { q.now = append(q.now, r) }
func (q *delayRecordingQueue) AddAfter(r reconcile.Request, d time.Duration) {
	q.after[r] = append(q.after[r], d)
}

// ofTemplate maps a Challenge to its template, as the templates'
// controllers do.
func ofTemplate(_ context.Context, obj client.Object) []reconcile.Request {
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: obj.(*ctfv1alpha1.Challenge).Spec.Template}}}
}

// TestSettledDelaysEveryRequest: every event of a template's instances,
// of every kind, enqueues the template after the settle and never at once,
// so that the queue, which keeps an item once at its earliest time, runs
// one reconcile for a burst of them.
func TestSettledDelaysEveryRequest(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	q := &delayRecordingQueue{after: map[reconcile.Request][]time.Duration{}}
	h := Settled(ofTemplate, time.Second)
	of := func(i int, template string) *ctfv1alpha1.Challenge {
		return &ctfv1alpha1.Challenge{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("team-", i), Namespace: "ctf"},
			Spec: ctfv1alpha1.ChallengeSpec{Template: template}}
	}
	for i := range 3 {
		h.Create(ctx, event.CreateEvent{Object: of(i, "web")}, q)
	}
	h.Update(ctx, event.UpdateEvent{ObjectOld: of(0, "web"), ObjectNew: of(0, "web")}, q)
	h.Delete(ctx, event.DeleteEvent{Object: of(1, "web")}, q)
	h.Generic(ctx, event.GenericEvent{Object: of(2, "pwn")}, q)

	g.Expect(q.now).To(BeEmpty(), "nothing at once")
	web, pwn := reconcile.Request{NamespacedName: client.ObjectKey{Name: "web"}}, reconcile.Request{NamespacedName: client.ObjectKey{Name: "pwn"}}
	g.Expect(q.after).To(HaveKeyWithValue(web, HaveEach(time.Second)))
	g.Expect(q.after[web]).To(HaveLen(5), "each event, the update's two objects mapped to one request")
	g.Expect(q.after).To(HaveKeyWithValue(pwn, []time.Duration{time.Second}))
	g.Expect(q.after).To(HaveLen(2))
}

// TestSettledBurstIsOneItem: on controller-runtime's priority queue, a
// burst of settled events leaves one item, ready only after the settle.
func TestSettledBurstIsOneItem(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	q := priorityqueue.New[reconcile.Request]("settled-test")
	defer q.ShutDown()
	h := Settled(ofTemplate, 100*time.Millisecond)
	for i := range 100 {
		h.Create(ctx, event.CreateEvent{Object: &ctfv1alpha1.Challenge{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("team-", i), Namespace: "ctf"},
			Spec: ctfv1alpha1.ChallengeSpec{Template: "web"}}}, q)
	}
	g.Eventually(q.Len, 10*time.Second, 10*time.Millisecond).Should(Equal(1), "the burst, gathered")
	item, _ := q.Get()
	g.Expect(item.Name).To(Equal("web"))
	q.Done(item)
	g.Expect(q.Len()).To(BeZero(), "one item for the whole burst")
}
