package challenge

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/controller"
	"github.com/challenge-operator/challenge-operator/internal/helmobject"
	"github.com/challenge-operator/challenge-operator/internal/lifecycle"
	"github.com/challenge-operator/challenge-operator/internal/metrics"
	"github.com/challenge-operator/challenge-operator/internal/readthrough"
)

// StatusWriter computes the whole status of a Challenge and writes it. It is
// the only code that writes Challenge status: the Helm reconciler's writes
// reach it through StatusClient and the pre-release hook, the StatusReconciler's
// directly. Every write recomputes everything, so no field can go missing.
type StatusWriter struct {
	// Client writes the status.
	Client client.Client
	// Reader reads the last written status (from the cache), which the Helm
	// reconciler's own status rewrite would otherwise erase. A stale read
	// costs a conflict and a retry, never a lost write: the status is
	// written with the resourceVersion it was computed from.
	Reader client.Reader
	// Live reads the last written status from the API server: of a Challenge
	// the cache has not seen yet (one the Helm reconciler holds, created a
	// moment ago; else its status would go unwritten, and nothing would come
	// back to write it), and when a status computed from Reader's read was
	// refused as stale.
	Live client.Reader
	// Observer reads what the status depends on.
	Observer *Observer
	// Recorder emits an Event on every phase change.
	Recorder events.EventRecorder
	// OperatorsOwn tells the operator's own instances (unclaimed pooled
	// ones, canaries), which no team waits on: the teams' measures leave
	// them out. Nil for none.
	OperatorsOwn func(*ctfv1alpha1.Challenge) bool

	// rendered is the generation of each Challenge (by namespace/name) that
	// the Helm reconciler last rendered: what its status may claim observed.
	rendered sync.Map
	// handled is, by namespace/name, the generation (a handledSpec) whose
	// outcome the Helm reconciler last wrote, with its spec: what a new
	// generation is compared with to tell a renewal from a spec to roll out.
	handled sync.Map
	// written holds, by namespace/name, the last write of this process to
	// the Challenge (a writtenStep) until the cache is seen past it.
	written sync.Map
}

// writtenStep is a write of this process that moved a Challenge from
// resourceVersion from to to: a status it wrote, or, with status nil, the
// Helm reconciler's patch of its finalizers alone (the status at to is the
// status at from).
type writtenStep struct {
	from, to string
	status   *ctfv1alpha1.ChallengeStatus
}

// FinalizersWritten records that the Helm reconciler moved the Challenge at
// key from resourceVersion from to to by changing its finalizers alone. The
// reconciler writes the status next, from a cache that has rarely seen its
// own patch yet: that write would be refused as a conflict and cost a read
// from the API server and a second write (a claim's cost went from 3 writes
// to 5). Knowing the patch, the writer writes at to straight away.
func (w *StatusWriter) FinalizersWritten(key client.ObjectKey, from, to string) {
	w.written.Store(key, writtenStep{from: from, to: to})
}

// recordWrite records the status write that moved ch from resourceVersion from
// to its own. The next change to the instance's workloads often reaches the
// status controller before the write reaches the cache; recomputed from the
// status before it, the status differs from that one and was written again
// at from: a conflict, a requeue and a recompute (24 for 100 installs in a
// burst). A teardown's write is not kept: the Challenge goes soon after, and
// a step recorded once Forget has run would stay for good.
func (w *StatusWriter) recordWrite(ch *ctfv1alpha1.Challenge, from string) {
	if from == "" || !ch.DeletionTimestamp.IsZero() {
		return
	}
	w.written.Store(client.ObjectKeyFromObject(ch), writtenStep{from: from, to: ch.ResourceVersion, status: ch.Status.DeepCopy()})
}

// caughtUp brings ch, as a cache holds it, to this process's last write of
// it when the cache has not seen that write yet: the Challenge at to is the
// one at from with the status written. Once the cache holds the write, it
// is forgotten. A cache at any other version is left as it is: older, it
// fails the write with a conflict, as it did; newer, the next write forgets.
func (w *StatusWriter) caughtUp(ch *ctfv1alpha1.Challenge) {
	key := client.ObjectKeyFromObject(ch)
	v, ok := w.written.Load(key)
	if !ok {
		return
	}
	switch step := v.(writtenStep); ch.ResourceVersion {
	case step.to:
		w.written.CompareAndDelete(key, v)
	case step.from:
		ch.ResourceVersion = step.to
		if step.status != nil {
			ch.Status = *step.status.DeepCopy()
		}
	}
}

// Rendering records that the Helm reconciler renders the release of obj at
// its generation. The reconciler re-reads the Challenge before it writes its
// status, so a generation that arrived meanwhile would otherwise be claimed
// observed although the release holds the one before.
func (w *StatusWriter) Rendering(obj client.Object) {
	w.rendered.Store(client.ObjectKeyFromObject(obj), obj.GetGeneration())
}

// handledSpec is a generation of a Challenge the Helm reconciler handled,
// and the digest of its spec without the fields that are never rendered
// (renderedSpec). The UID tells a Challenge deleted and created again under
// the same name (a team restarting its instance) from the one before, whose
// record its delete event may not have dropped yet.
type handledSpec struct {
	uid        types.UID
	generation int64
	spec       specDigest
}

// specDigest is the SHA-256 of a spec: 32 bytes per Challenge kept, where
// the spec itself would be a kilobyte or more.
type specDigest [sha256.Size]byte

// renderedSpec digests what of ch's spec reaches its release: all of it but
// the renewal and the lifetime, which only move the expiry
// (internal/lifecycle) and are no Helm value (internal/values'
// TestRenewalAndLifetimeReachNoValue holds it to that). Zero if it cannot be
// encoded.
func renderedSpec(ch *ctfv1alpha1.Challenge) specDigest {
	spec := ch.Spec.DeepCopy()
	spec.RenewedAt, spec.Lifetime = nil, nil
	data, err := json.Marshal(spec)
	if err != nil {
		return specDigest{}
	}
	return sha256.Sum256(data)
}

// recordHandled records ch's spec as the one the Helm reconciler handled at
// generation observed, when ch holds that generation's spec (the reconciler
// may hold a newer one than it rendered), once per generation.
func (w *StatusWriter) recordHandled(ch *ctfv1alpha1.Challenge, observed int64) {
	key := client.ObjectKeyFromObject(ch)
	if ch.Generation != observed {
		return
	}
	if v, ok := w.handled.Load(key); ok {
		if rec := v.(handledSpec); rec.uid == ch.UID && rec.generation == observed {
			return
		}
	}
	w.handled.Store(key, handledSpec{uid: ch.UID, generation: observed, spec: renderedSpec(ch)})
}

// operationFor is the release operation outstanding for ch
// (lifecycle.OperationFor), but none for a new generation that renders as
// the one the Helm reconciler last handled: a renewal, or a lowered
// lifetime, rolls nothing out, so the instance stays as it is (Running)
// instead of passing through Pending. After a restart, with nothing
// recorded, a new generation is an upgrade until the reconciler has seen it.
func (w *StatusWriter) operationFor(ch *ctfv1alpha1.Challenge) lifecycle.Operation {
	op := lifecycle.OperationFor(ch.Generation, ch.Status.ObservedGeneration, ch.Status.Conditions)
	if op != lifecycle.Upgrading {
		return op
	}
	if v, ok := w.handled.Load(client.ObjectKeyFromObject(ch)); ok {
		rec := v.(handledSpec)
		if rec.uid == ch.UID && rec.generation == ch.Status.ObservedGeneration && rec.spec != (specDigest{}) && rec.spec == renderedSpec(ch) {
			return lifecycle.NoOperation
		}
	}
	return op
}

// Forget drops what is recorded of a Challenge that is gone.
func (w *StatusWriter) Forget(key client.ObjectKey) {
	w.rendered.Delete(key)
	w.handled.Delete(key)
	w.written.Delete(key)
}

// observedGeneration is the generation a status written by the Helm
// reconciler may claim: ch's, unless the last render was of an older one.
func (w *StatusWriter) observedGeneration(ch *ctfv1alpha1.Challenge) int64 {
	if g, ok := w.rendered.Load(client.ObjectKeyFromObject(ch)); ok {
		return min(g.(int64), ch.Generation)
	}
	return ch.Generation
}

// Refresh recomputes the status of ch without advancing observedGeneration,
// and writes it if it changed. A new generation of an instance held back
// (Queued, or refused with nothing installed) is no install until the Helm
// reconciler admits it, whose pre-release hook then says so: marked here,
// a renewal of a queued instance flashed Pending and admitted it, starting
// its lifetime while it still waited.
func (w *StatusWriter) Refresh(ctx context.Context, ch *ctfv1alpha1.Challenge) error {
	w.caughtUp(ch)
	op := w.operationFor(ch)
	if op == lifecycle.Installing && (ch.Status.Phase == ctfv1alpha1.PhaseQueued || ch.Status.Phase == ctfv1alpha1.PhaseError) {
		op = lifecycle.NoOperation
	}
	return w.write(ctx, ch, ch.Status.DeepCopy(), ch.Status.ObservedGeneration, op)
}

// MarkReleasing writes that op is starting on the release of obj, so that a
// platform sees Pending for the whole install or upgrade, not only after it.
func (w *StatusWriter) MarkReleasing(ctx context.Context, obj *unstructured.Unstructured, op lifecycle.Operation) error {
	return w.fromHelm(ctx, obj, func(ch *ctfv1alpha1.Challenge, stored *ctfv1alpha1.ChallengeStatus) error {
		return w.write(ctx, ch, stored, ch.Status.ObservedGeneration, op)
	})
}

// updateFromHelm completes a status written by the Helm reconciler (which
// holds only its conditions and deployedRelease), records that the reconciler
// has handled this generation, and writes it.
func (w *StatusWriter) updateFromHelm(ctx context.Context, obj *unstructured.Unstructured) error {
	return w.fromHelm(ctx, obj, func(ch *ctfv1alpha1.Challenge, stored *ctfv1alpha1.ChallengeStatus) error {
		observed := w.observedGeneration(ch)
		// Recorded before the write: once it claims observed, a renewal
		// arriving meanwhile must find the record, or it flashes Pending. A
		// failed write leaves a record no status refers to.
		w.recordHandled(ch, observed)
		if upgraded(ch, observed) {
			if err := w.Observer.Rollouts.Expect(ctx, w.Observer.namespace(ch), ch); err != nil {
				return err
			}
		}
		return w.write(ctx, ch, stored, observed, lifecycle.NoOperation)
	})
}

// upgraded tells whether the Helm reconciler has just handled a new
// generation of an installed release (an upgrade, or a renewal that
// renders the same): its Deployments may have changed under the cache.
func upgraded(ch *ctfv1alpha1.Challenge, observed int64) bool {
	return ch.Status.ObservedGeneration != 0 && ch.Status.ObservedGeneration < observed &&
		meta.IsStatusConditionTrue(ch.Status.Conditions, lifecycle.ConditionDeployed)
}

// fromHelm completes the status the Helm reconciler holds in obj with the
// last written one, writes it with write, and hands the resourceVersion (new,
// or the one read when nothing changed) and status back to the reconciler,
// which may go on to update the object (its finalizer). A conflict means the
// last status came from a cache that had not seen the latest write, often the
// reconciler's own finalizer: it is read again from the API server and
// written once more. Nothing else would retry it: the reconciler ignores a
// failed status write when the reconcile itself failed (and never requeues a
// terminal error), and the status controller waits for the first status
// written here.
func (w *StatusWriter) fromHelm(ctx context.Context, obj *unstructured.Unstructured, write func(ch *ctfv1alpha1.Challenge, stored *ctfv1alpha1.ChallengeStatus) error) error {
	ch, stored, err := w.decodeWithLast(ctx, obj, readthrough.Reader{Reader: w.Reader, Live: w.Live})
	if err != nil {
		return err
	}
	err = write(ch, stored)
	if apierrors.IsConflict(err) && w.Live != nil {
		if ch, stored, err = w.decodeWithLast(ctx, obj, w.Live); err != nil {
			return err
		}
		err = write(ch, stored)
	}
	if err != nil {
		return err
	}
	return encodeInto(ch, obj)
}

// decodeWithLast reads the Challenge the Helm reconciler holds and restores
// what its status rewrite dropped from the last written status, which it
// also returns: what the status written from it is compared with. It
// writes over the resourceVersion it read (a conflict if that was stale):
// only status changes, the reconciler's conditions are its own, and the
// rest is recomputed.
func (w *StatusWriter) decodeWithLast(ctx context.Context, obj *unstructured.Unstructured, reader client.Reader) (*ctfv1alpha1.Challenge, *ctfv1alpha1.ChallengeStatus, error) {
	ch, err := helmobject.Challenge(obj)
	if err != nil {
		return nil, nil, err
	}
	last := &ctfv1alpha1.Challenge{}
	if err := reader.Get(ctx, client.ObjectKeyFromObject(obj), last); err != nil {
		return nil, nil, err
	}
	w.caughtUp(last)
	ch.ResourceVersion = last.ResourceVersion
	ch.DeletionTimestamp = last.DeletionTimestamp
	ch.Status.StartedAt, ch.Status.AdmittedAt = last.Status.StartedAt, last.Status.AdmittedAt
	ch.Status.ReadyAt = last.Status.ReadyAt
	ch.Status.ObservedGeneration = last.Status.ObservedGeneration
	ch.Status.Renewals, ch.Status.RenewedAt = last.Status.Renewals, last.Status.RenewedAt
	ch.Status.LastRenewalRequest, ch.Status.ExpiresAt = last.Status.LastRenewalRequest, last.Status.ExpiresAt
	ch.Status.Phase, ch.Status.Reason = last.Status.Phase, last.Status.Reason
	if ch.Status.Conditions == nil {
		ch.Status.Conditions = slices.Clone(last.Status.Conditions)
	}
	// What the status written from it leaves out, so that a reconcile
	// that changes nothing writes nothing.
	ch.Status.Conditions = lifecycle.WithoutSilentConditions(ch.Status.Conditions, ch.Status.PooledInstance != nil)
	// The reconciler rebuilds the conditions from its own read of the
	// Challenge, which may predate the last write: a condition it does not
	// manage (the verdict on a renewal) is kept from the last status.
	if c := meta.FindStatusCondition(last.Status.Conditions, lifecycle.ConditionRenewed); c != nil {
		meta.SetStatusCondition(&ch.Status.Conditions, *c)
	}
	return ch, &last.Status, nil
}

// write recomputes ch.Status and writes it when it differs from before,
// the status last written: the Helm reconciler's holds only its own
// fields, and compared with it every status would be written, again and
// again unchanged.
func (w *StatusWriter) write(ctx context.Context, ch *ctfv1alpha1.Challenge, before *ctfv1alpha1.ChallengeStatus, observedGeneration int64, op lifecycle.Operation) error {
	obs, err := w.Observer.Observe(ctx, ch)
	if err != nil {
		return err
	}
	obs.Operation = op
	lifecycle.Apply(&ch.Status, observedGeneration, obs, metav1.Now())
	if equality.Semantic.DeepEqual(before, &ch.Status) {
		return nil
	}
	// Once Deleted is written, a teardown's status stays until the Challenge
	// is gone: its objects going one by one change nothing a platform acts
	// on, and each write would cost requests (and conflicts) per instance.
	if before.Phase == ctfv1alpha1.PhaseDeleted && ch.Status.Phase == ctfv1alpha1.PhaseDeleted {
		return nil
	}
	if err := w.apply(ctx, ch); err != nil {
		return err
	}
	w.report(ch, before)
	return nil
}

// StatusFieldManager owns every field of a Challenge's status, and nothing else.
const StatusFieldManager = "challenge-operator-status"

// apply writes ch.Status (ApplyStatus) and records the write.
func (w *StatusWriter) apply(ctx context.Context, ch *ctfv1alpha1.Challenge) error {
	from := ch.ResourceVersion
	if err := ApplyStatus(ctx, w.Client, ch); err != nil {
		return err
	}
	w.recordWrite(ch, from)
	return nil
}

// ApplyStatus writes ch.Status with a server-side apply of the status alone:
// the writer owns those fields and sends nothing else. The resourceVersion
// the status was computed from goes with it as a precondition, so a status
// computed from a stale read is refused (a conflict, then a recompute)
// rather than written over a newer one. Ownership is forced because status
// fields written by earlier versions with Update belong to another manager.
// ch gets the new resourceVersion, managedFields and status as stored.
func ApplyStatus(ctx context.Context, cl client.Client, ch *ctfv1alpha1.Challenge) error {
	return controller.ApplyStatusOf(ctx, cl, ch, "Challenge", &ch.Status, StatusFieldManager)
}

// progressing tells whether st is a step of a start the Events already
// announced (Installing, Upgrading): workloads or an address on their way.
func progressing(st *ctfv1alpha1.ChallengeStatus) bool {
	return st.Phase == ctfv1alpha1.PhasePending &&
		(st.Reason == lifecycle.ReasonWorkloadsNotReady || st.Reason == lifecycle.ReasonEndpointPending)
}

// report turns a written status change into an Event and metrics.
func (w *StatusWriter) report(ch *ctfv1alpha1.Challenge, before *ctfv1alpha1.ChallengeStatus) {
	st := &ch.Status
	w.reportRenewal(ch, before)
	if st.Phase == before.Phase && (st.Reason == before.Reason || progressing(st)) {
		return
	}
	eventType := corev1.EventTypeNormal
	if st.Phase == ctfv1alpha1.PhaseError {
		eventType = corev1.EventTypeWarning
		metrics.ObserveError(st.Reason)
	}
	if w.Recorder != nil {
		w.Recorder.Eventf(ch, nil, eventType, st.Reason, string(st.Phase), "%s: %s", st.Phase, st.Message)
	}
	if before.ReadyAt == nil && st.ReadyAt != nil && (w.OperatorsOwn == nil || !w.OperatorsOwn(ch)) {
		// A pooled instance waits for no team (its claimant's time counts),
		// nor does a canary.
		metrics.ObserveTimeToReady(st.ReadyAt.Sub(ch.CreationTimestamp.Time))
	}
	if before.Phase == ctfv1alpha1.PhaseQueued && st.Phase != ctfv1alpha1.PhaseDeleted {
		metrics.ObserveQueueWait(time.Since(ch.CreationTimestamp.Time))
	}
}

func (w *StatusWriter) reportRenewal(ch *ctfv1alpha1.Challenge, before *ctfv1alpha1.ChallengeStatus) {
	now := meta.FindStatusCondition(ch.Status.Conditions, lifecycle.ConditionRenewed)
	was := meta.FindStatusCondition(before.Conditions, lifecycle.ConditionRenewed)
	if now == nil || (was != nil && was.Message == now.Message && was.Status == now.Status) {
		return
	}
	metrics.ObserveRenewal(now.Reason)
	if w.Recorder == nil {
		return
	}
	eventType := corev1.EventTypeNormal
	if now.Status != metav1.ConditionTrue {
		eventType = corev1.EventTypeWarning
	}
	w.Recorder.Eventf(ch, nil, eventType, now.Reason, "Renew", "%s", now.Message)
}

func encodeInto(ch *ctfv1alpha1.Challenge, obj *unstructured.Unstructured) error {
	out, err := runtime.DefaultUnstructuredConverter.ToUnstructured(ch)
	if err != nil {
		return err
	}
	gvk := obj.GroupVersionKind()
	obj.Object = out
	obj.SetGroupVersionKind(gvk)
	return nil
}
