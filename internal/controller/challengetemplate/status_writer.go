// Package challengetemplate holds the controllers that reconcile a
// ChallengeTemplate's status, each writing its part through the one status
// writer (TemplateStatusWriter): the count of its instances, its
// conditions and health (with a Degraded template's canaries), its solver
// check, and its static flags' digests.
package challengetemplate

import (
	"context"
	"hash/fnv"
	"slices"
	"sync"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/controller"
)

// TemplateStatusFieldManager owns every field of a ChallengeTemplate's
// status, and nothing else.
const TemplateStatusFieldManager = "challenge-operator-template-status"

// TemplateStatusWriter is the one writer of a ChallengeTemplate's status, as
// challenge.StatusWriter is a Challenge's. Each part of it is computed by the
// controller that observes it, which hands it here:
//
//   - activeInstances: TemplateStatusReconciler;
//   - the conditions Accepted, Ready, Stalled and Degraded, health and
//     observedGeneration: TemplateConditionsReconciler;
//   - the condition SolverHealthy and solver: SolverCheckReconciler;
//   - pool: PoolReconciler;
//   - staticFlags: StaticFlagsReconciler.
//
// Every write is one server-side apply of the whole status by one field
// manager (TemplateStatusFieldManager), so each field has one owner, and
// goes with the resourceVersion the status was read at: a status read from a
// stale cache is refused, never written over a newer one.
type TemplateStatusWriter struct {
	// Client reads templates from the cache and writes their status.
	Client client.Client
	// Live reads a template from the API server when a part observed apart
	// from the rest of the status (Set) was refused as read stale; nil: the
	// conflict is returned.
	Live client.Reader

	// locks serialise the writes to one template (by a hash of its name),
	// so that each starts from the one before (written) rather than from a
	// cache that has not seen it and a conflict: the count, the pool and
	// the conditions are woken by the same change of an instance.
	locks [16]sync.Mutex
	// written holds, by template name, this process's last write to the
	// template (a *templateWrite) until the cache is seen past it.
	written sync.Map
}

// templateWrite is what this process's status writes moved a template
// through: from each resourceVersion of from, one after the other, to to,
// where it stored status. A template at any of them is the one at to but
// for its status: each write was of the status alone, at the
// resourceVersion the one before gave.
type templateWrite struct {
	from   []string
	to     string
	status *ctfv1alpha1.ChallengeTemplateStatus
}

// maxChainedWrites bounds the resourceVersions a templateWrite remembers:
// a cache further behind is refused (a conflict) and read again.
const maxChainedWrites = 8

// +kubebuilder:rbac:groups=ctf.challenge-operator.io,resources=challengetemplates/status,verbs=get;update;patch

// Read reads the template key from the cache, brought to this process's
// last write of its status when the cache has not seen that write yet (the
// template at its resourceVersion is the one read with the status written):
// a status computed from the one before would be refused as stale. It is
// every template controller's first step. A template that is gone reads as
// nil, without an error, and gone (when not nil) is told its name.
func (w *TemplateStatusWriter) Read(ctx context.Context, key client.ObjectKey, gone func(name string)) (*ctfv1alpha1.ChallengeTemplate, error) {
	tmpl := &ctfv1alpha1.ChallengeTemplate{}
	err := w.Client.Get(ctx, key, tmpl)
	if apierrors.IsNotFound(err) {
		w.written.Delete(key.Name)
		if gone != nil {
			gone(key.Name)
		}
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	w.caughtUp(tmpl)
	return tmpl, nil
}

// caughtUp brings tmpl, as a cache holds it, to this process's last write of
// its status when the cache has not seen it yet; once the cache has, the
// writes are forgotten. A cache at any other version is left as it is:
// older, the write from it is refused as a conflict; newer, the next read
// forgets.
func (w *TemplateStatusWriter) caughtUp(tmpl *ctfv1alpha1.ChallengeTemplate) {
	v, ok := w.written.Load(tmpl.Name)
	if !ok {
		return
	}
	step := v.(*templateWrite)
	switch {
	case tmpl.ResourceVersion == step.to:
		w.written.CompareAndDelete(tmpl.Name, v)
	case slices.Contains(step.from, tmpl.ResourceVersion):
		tmpl.ResourceVersion = step.to
		tmpl.Status = *step.status.DeepCopy()
	}
}

// record records the status write that moved tmpl from resourceVersion
// from to its own, after the writes that led to from.
func (w *TemplateStatusWriter) record(tmpl *ctfv1alpha1.ChallengeTemplate, from string) {
	chain := []string{from}
	if v, ok := w.written.Load(tmpl.Name); ok && v.(*templateWrite).to == from {
		chain = append(slices.Clone(v.(*templateWrite).from), from)
	}
	chain = chain[max(0, len(chain)-maxChainedWrites):]
	w.written.Store(tmpl.Name, &templateWrite{from: chain, to: tmpl.ResourceVersion, status: tmpl.Status.DeepCopy()})
}

// TemplateDecision is what a template controller decided from the template
// as read (Decide), besides the status it changed.
type TemplateDecision struct {
	// Result says when to look at the template again.
	Result ctrl.Result
	// Then, when not nil, acts on the decision once its status is stored:
	// told whether the status changed and was written.
	Then func(ctx context.Context, written bool) error
}

// Decide is a template controller's whole reconcile of the template key when
// what it writes is decided from the rest of the status (its conditions,
// health, solver check): it reads the template (Read; gone as Read's),
// decide changes the status in place from what it observed and acts (acts
// that repeat safely), and the status is written if it changed; then what
// decide left for after it runs. A write refused because the template
// changed since it was read (a conflict) is not written over it, nor acted
// on: it is decided again after conflictRetry, from the template as it is.
func (w *TemplateStatusWriter) Decide(ctx context.Context, key client.ObjectKey, gone func(name string),
	decide func(context.Context, *ctfv1alpha1.ChallengeTemplate) (TemplateDecision, error)) (ctrl.Result, error) {
	tmpl, err := w.Read(ctx, key, gone)
	if tmpl == nil || err != nil {
		return ctrl.Result{}, err
	}
	before := tmpl.Status.DeepCopy()
	d, err := decide(ctx, tmpl)
	if err != nil {
		return ctrl.Result{}, err
	}
	written, err := w.write(ctx, tmpl, before)
	if apierrors.IsConflict(err) {
		return ctrl.Result{RequeueAfter: conflictRetry}, nil
	}
	if err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if d.Then != nil {
		if err := d.Then(ctx, written); err != nil {
			return ctrl.Result{}, err
		}
	}
	return d.Result, nil
}

// conflictRetry is how soon a template whose status changed under a
// decision is looked at again: at once, but after the cache has it.
const conflictRetry = 100 * time.Millisecond

// write writes tmpl's status, changed from before, if it differs from it
// (equalStatus), and says whether it did.
func (w *TemplateStatusWriter) write(ctx context.Context, tmpl *ctfv1alpha1.ChallengeTemplate, before *ctfv1alpha1.ChallengeTemplateStatus) (bool, error) {
	if equalStatus(before, &tmpl.Status) {
		return false, nil
	}
	mu := w.lock(tmpl.Name)
	defer mu.Unlock()
	return true, w.apply(ctx, tmpl, before)
}

// Set writes the part of tmpl's status that set sets: one observed apart
// from the rest of the status (a count, the pool, the static flags'
// digests), which holds whatever the rest says. It is set on the status as
// this process last wrote it, and when that was read stale, on the status
// read again from the API server. A template gone is no error.
func (w *TemplateStatusWriter) Set(ctx context.Context, tmpl *ctfv1alpha1.ChallengeTemplate, set func(*ctfv1alpha1.ChallengeTemplateStatus)) error {
	mu := w.lock(tmpl.Name)
	defer mu.Unlock()
	w.caughtUp(tmpl)
	err := w.setOn(ctx, tmpl, set)
	if apierrors.IsConflict(err) && w.Live != nil {
		if err := w.Live.Get(ctx, client.ObjectKeyFromObject(tmpl), tmpl); err != nil {
			return client.IgnoreNotFound(err)
		}
		err = w.setOn(ctx, tmpl, set)
	}
	return client.IgnoreNotFound(err)
}

// setOn sets a part of tmpl's status with set, and writes it if it changed.
func (w *TemplateStatusWriter) setOn(ctx context.Context, tmpl *ctfv1alpha1.ChallengeTemplate, set func(*ctfv1alpha1.ChallengeTemplateStatus)) error {
	before := tmpl.Status.DeepCopy()
	set(&tmpl.Status)
	if equalStatus(before, &tmpl.Status) {
		return nil
	}
	return w.apply(ctx, tmpl, before)
}

// lock locks the writes to the template name, and returns the lock to
// unlock.
func (w *TemplateStatusWriter) lock(name string) *sync.Mutex {
	h := fnv.New32a()
	_, _ = h.Write([]byte(name))
	mu := &w.locks[h.Sum32()%uint32(len(w.locks))]
	mu.Lock()
	return mu
}

// apply writes tmpl's status, changed from before, at its resourceVersion,
// and records the write; tmpl gets the template as stored.
func (w *TemplateStatusWriter) apply(ctx context.Context, tmpl *ctfv1alpha1.ChallengeTemplate, before *ctfv1alpha1.ChallengeTemplateStatus) error {
	if err := w.dropEmptied(ctx, tmpl, before); err != nil {
		return err
	}
	from := tmpl.ResourceVersion
	want := tmpl.Status.DeepCopy()
	if err := controller.ApplyStatusOf(ctx, w.Client, tmpl, "ChallengeTemplate", &tmpl.Status, TemplateStatusFieldManager); err != nil {
		return err
	}
	if err := w.dropShared(ctx, tmpl, want); err != nil {
		return err
	}
	w.record(tmpl, from)
	return nil
}

// dropEmptied first applies tmpl's status without the objects it empties
// (status.health once a template is lifted, its failures and canary gone),
// when there are any. The API server stores an object applied empty, where
// it held fields of the same manager, as null, and refuses it (a
// structured-merge-diff bug): left out, it is dropped, and applied empty
// next, it is a new one, stored as {} as before.
func (w *TemplateStatusWriter) dropEmptied(ctx context.Context, tmpl *ctfv1alpha1.ChallengeTemplate, before *ctfv1alpha1.ChallengeTemplateStatus) error {
	applied, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&tmpl.Status)
	if err != nil {
		return err
	}
	held, err := runtime.DefaultUnstructuredConverter.ToUnstructured(before)
	if err != nil || !pruneEmptied(applied, held) {
		return err
	}
	first := tmpl.DeepCopy()
	first.Status = ctfv1alpha1.ChallengeTemplateStatus{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(applied, &first.Status); err != nil {
		return err
	}
	if err := controller.ApplyStatusOf(ctx, w.Client, first, "ChallengeTemplate", &first.Status, TemplateStatusFieldManager); err != nil {
		return err
	}
	w.record(first, tmpl.ResourceVersion)
	tmpl.ResourceVersion = first.ResourceVersion
	return nil
}

// pruneEmptied removes from applied each object that is empty where held
// has one with fields, and says whether it removed any.
func pruneEmptied(applied, held map[string]any) bool {
	pruned := false
	for k, v := range applied {
		obj, ok := v.(map[string]any)
		if !ok {
			continue
		}
		was, _ := held[k].(map[string]any)
		switch {
		case len(obj) == 0 && len(was) > 0:
			delete(applied, k)
			pruned = true
		case len(obj) > 0 && pruneEmptied(obj, was):
			pruned = true
		}
	}
	return pruned
}

// dropShared removes from tmpl's status, as stored by an apply of want,
// what want leaves out but another field manager owns too. Earlier
// versions wrote the status with merge patches: their manager shares every
// field whose value it wrote as the apply does (forcing takes only the
// values that differ), and an apply drops only the fields it alone owned,
// so a Stalled condition, a removed flag's digest or a dropped pool would
// stay for good. A merge patch from the status as stored to want removes
// them; nothing of what it keeps changes owner.
func (w *TemplateStatusWriter) dropShared(ctx context.Context, tmpl *ctfv1alpha1.ChallengeTemplate, want *ctfv1alpha1.ChallengeTemplateStatus) error {
	if !statusShared(tmpl.ManagedFields) {
		return nil
	}
	stored := tmpl.DeepCopy()
	tmpl.Status = *want
	data, err := client.MergeFrom(stored).Data(tmpl)
	if err != nil || string(data) == "{}" {
		tmpl.Status = stored.Status
		return err
	}
	return w.Client.Status().Patch(ctx, tmpl, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{}),
		client.FieldOwner(TemplateStatusFieldManager))
}

// statusShared tells whether a field manager other than the writer's apply
// owns fields of the status.
func statusShared(managed []metav1.ManagedFieldsEntry) bool {
	for _, m := range managed {
		if m.Subresource == "status" && (m.Manager != TemplateStatusFieldManager || m.Operation != metav1.ManagedFieldsOperationApply) {
			return true
		}
	}
	return false
}

// equalStatus tells whether a and b are the same status: the same
// conditions (but for their transition times, which SetStatusCondition
// keeps), count, pool, static flags, health, solver check and observed
// generation.
func equalStatus(a, b *ctfv1alpha1.ChallengeTemplateStatus) bool {
	if a.ObservedGeneration != b.ObservedGeneration || a.ActiveInstances != b.ActiveInstances || len(a.Conditions) != len(b.Conditions) ||
		!apiequality.Semantic.DeepEqual(a.Pool, b.Pool) || !apiequality.Semantic.DeepEqual(a.StaticFlags, b.StaticFlags) ||
		!apiequality.Semantic.DeepEqual(a.Health, b.Health) || !apiequality.Semantic.DeepEqual(a.Solver, b.Solver) {
		return false
	}
	for _, c := range b.Conditions {
		old := apimeta.FindStatusCondition(a.Conditions, c.Type)
		if old == nil || old.Status != c.Status || old.Reason != c.Reason || old.Message != c.Message || old.ObservedGeneration != c.ObservedGeneration {
			return false
		}
	}
	return true
}
