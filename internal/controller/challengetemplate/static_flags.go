package challengetemplate

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/ctfflag"
	"github.com/challenge-operator/challenge-operator/internal/flagtag"
	"github.com/challenge-operator/challenge-operator/internal/identity"
	"github.com/challenge-operator/challenge-operator/internal/organisersecret"
	"github.com/challenge-operator/challenge-operator/internal/values"
)

// StaticFlagsReconciler publishes in each template's status the digests of
// its static named flags (flagtag.StaticDigest): the instancer, which reads
// no Secret, verifies submissions against them. The organiser's Secrets are
// read uncached and again every staticFlagsRefresh, so that a changed flag
// is published within it.
//
// A container reads its flag when it starts (a variable, or a file mounted
// by subPath), so a changed flag reaches a running instance only when its
// pods start again, after the Helm reconciler has written the new value into
// its Secret. Until then the instance shows the previous value, and a team
// that submits it was told wrong. So a changed flag's previous digest is
// published beside the new one (status.staticFlags[].previous) for as long as
// a running instance may serve it, with the number of those instances and an
// Event: nothing is rolled under a team's feet, new instances get the new
// value, and the old one goes when the last instance that showed it does.
type StaticFlagsReconciler struct {
	Client client.Client
	// Status reads the template and writes its status.staticFlags.
	Status *TemplateStatusWriter
	// Organiser reads the organiser's Secrets, uncached, only those a
	// template may read.
	Organiser organisersecret.Reader
	// Live reads the instances' own flag Secrets, uncached (the cache holds
	// no instance's Secret), only while a previous value is held.
	Live  client.Reader
	Codec *flagtag.Codec
	// Recorder tells the organiser of a changed flag; nil for none.
	Recorder events.EventRecorder
}

// staticFlagsRefresh is how often a template's static flags are read again.
const staticFlagsRefresh = time.Minute

// maxPreviousStaticFlags bounds the earlier values held for one flag (the
// schema's MaxItems): beyond, the oldest goes even while served.
const maxPreviousStaticFlags = 4

// Event reasons of a changed static flag, on the template.
const (
	// ReasonStaticFlagChanged: a static flag's Secret changed; the note says
	// how many running instances still serve the previous value.
	ReasonStaticFlagChanged = "StaticFlagChanged"
	// ReasonPreviousStaticFlagDropped: no running instance serves a static
	// flag's previous value any more, and it is no longer accepted (or, the
	// Warning, it was dropped while served: too many changes at once).
	ReasonPreviousStaticFlagDropped = "PreviousStaticFlagDropped"
)

// Reconcile publishes one template's static flags' digests.
func (r *StaticFlagsReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	tmpl, err := r.Status.Read(ctx, req.NamespacedName, nil)
	if tmpl == nil || err != nil {
		return ctrl.Result{}, err
	}
	var digests []ctfv1alpha1.StaticFlagDigest
	for i := range tmpl.Spec.Flags {
		f := &tmpl.Spec.Flags[i]
		if f.Static == nil || r.Organiser.Namespaces.Allow(tmpl, "flag "+f.Name, f.Static.Namespace) != nil {
			continue // the render says why
		}
		value, err := ctfflag.ResolveNamed(ctx, r.Organiser, r.Codec, tmpl, f, "")
		if err != nil {
			// Never the value: ResolveNamed names the Secret and key.
			logf.FromContext(ctx).Info("a static flag's digest is not published", "template", tmpl.Name, "flag", f.Name, "reason", err.Error())
			continue
		}
		digests = append(digests, ctfv1alpha1.StaticFlagDigest{Name: f.Name, Digest: r.Codec.StaticDigest(tmpl.Name, f.Name, value)})
	}
	var result ctrl.Result
	if len(digests) > 0 || slices.ContainsFunc(tmpl.Spec.Flags, func(f ctfv1alpha1.NamedFlag) bool { return f.Static != nil }) {
		result.RequeueAfter = staticFlagsRefresh
	}
	candidates := retire(tmpl.Status.StaticFlags, digests, metav1.NewTime(time.Now().Truncate(time.Second)))
	var served []ServedFlags
	if holdsPrevious(candidates) {
		if served, err = r.served(ctx, tmpl); err != nil {
			return ctrl.Result{}, err
		}
	}
	next, changes := HoldServed(tmpl.Status.StaticFlags, candidates, served)
	if err := r.Status.Set(ctx, tmpl, func(st *ctfv1alpha1.ChallengeTemplateStatus) { st.StaticFlags = next }); err != nil {
		return ctrl.Result{}, err
	}
	// Told once the status holds them: each is a change of the status.
	r.announce(tmpl, changes)
	return result, nil
}

// retire is the template's flags as published now (current) with, for
// each, the earlier values that may still be held: those held before (old)
// and the digest published before when it changed, retired at now. A
// value that is current again is not held as an earlier one.
func retire(old, current []ctfv1alpha1.StaticFlagDigest, now metav1.Time) []ctfv1alpha1.StaticFlagDigest {
	out := make([]ctfv1alpha1.StaticFlagDigest, 0, len(current))
	for _, d := range current {
		var previous []ctfv1alpha1.PreviousStaticFlag
		if i := slices.IndexFunc(old, func(o ctfv1alpha1.StaticFlagDigest) bool { return o.Name == d.Name }); i >= 0 {
			previous = slices.Clone(old[i].Previous)
			if old[i].Digest != d.Digest {
				previous = slices.DeleteFunc(previous, func(p ctfv1alpha1.PreviousStaticFlag) bool { return p.Digest == old[i].Digest })
				previous = append(previous, ctfv1alpha1.PreviousStaticFlag{Digest: old[i].Digest, RetiredAt: now})
			}
		}
		d.Previous = slices.DeleteFunc(previous, func(p ctfv1alpha1.PreviousStaticFlag) bool { return p.Digest == d.Digest })
		out = append(out, d)
	}
	return out
}

// holdsPrevious tells whether any flag of digests has an earlier value.
func holdsPrevious(digests []ctfv1alpha1.StaticFlagDigest) bool {
	return slices.ContainsFunc(digests, func(d ctfv1alpha1.StaticFlagDigest) bool { return len(d.Previous) > 0 })
}

// ServedFlags is what one running instance of a template may serve, as
// the operator can tell from outside its containers.
type ServedFlags struct {
	// Instance names it, "<namespace>/<name>" of its objects.
	Instance string
	// Digests are the digests of the static flags its Secret holds now, by
	// flag name: what a container that starts now reads.
	Digests map[string]string
	// StartedBeforeChange says a container of it runs that started before
	// its Secret last changed (or its Secret cannot be read): it may serve
	// any earlier value.
	StartedBeforeChange bool
}

// serves tells whether s may serve digest of flag.
func (s ServedFlags) serves(flag, digest string) bool {
	return s.StartedBeforeChange || s.Digests[flag] == digest
}

// FlagChange is what a reconcile changed in a flag's earlier values, for
// the organiser's Events.
type FlagChange struct {
	// Flag names the flag.
	Flag string
	// Retired is set when the flag changed: how many running instances
	// serve the value it changed from (0: it is not held).
	Retired *int32
	// Dropped counts the earlier values no running instance serves any
	// more; Evicted those dropped while served (maxPreviousStaticFlags).
	Dropped, Evicted int
}

// HoldServed is candidates (retire) with each earlier value counted
// against served and kept only while some running instance serves it, at
// most maxPreviousStaticFlags of them, the newest; and what changed since
// old.
func HoldServed(old, candidates []ctfv1alpha1.StaticFlagDigest, served []ServedFlags) ([]ctfv1alpha1.StaticFlagDigest, []FlagChange) {
	var changes []FlagChange
	out := make([]ctfv1alpha1.StaticFlagDigest, 0, len(candidates))
	for _, d := range candidates {
		change := FlagChange{Flag: d.Name}
		var held []ctfv1alpha1.PreviousStaticFlag
		for _, p := range d.Previous {
			p.Instances = 0
			for _, s := range served {
				if s.serves(d.Name, p.Digest) {
					p.Instances++
				}
			}
			if wasHeld(old, d.Name, p.Digest) {
				if p.Instances == 0 {
					change.Dropped++
					continue
				}
			} else {
				change.Retired = &p.Instances
				if p.Instances == 0 {
					continue
				}
			}
			held = append(held, p)
		}
		if over := len(held) - maxPreviousStaticFlags; over > 0 {
			change.Evicted, held = over, held[over:]
		}
		if len(held) == 0 {
			held = nil
		}
		d.Previous = held
		out = append(out, d)
		if change.Retired != nil || change.Dropped > 0 || change.Evicted > 0 {
			changes = append(changes, change)
		}
	}
	if len(out) == 0 {
		out = nil
	}
	return out, changes
}

// wasHeld tells whether old held digest as an earlier value of flag.
func wasHeld(old []ctfv1alpha1.StaticFlagDigest, flag, digest string) bool {
	i := slices.IndexFunc(old, func(o ctfv1alpha1.StaticFlagDigest) bool { return o.Name == flag })
	return i >= 0 && slices.ContainsFunc(old[i].Previous, func(p ctfv1alpha1.PreviousStaticFlag) bool { return p.Digest == digest })
}

// served reads what each running instance of tmpl may serve: its pods
// from the cache (by the challenge label, which is the template's name on
// every instance of it, pooled and canaries included), its flag Secret
// uncached. Digests only: no value leaves this function.
func (r *StaticFlagsReconciler) served(ctx context.Context, tmpl *ctfv1alpha1.ChallengeTemplate) ([]ServedFlags, error) {
	var pods corev1.PodList
	if err := r.Client.List(ctx, &pods, client.MatchingLabels{ctfv1alpha1.ChallengeLabel: tmpl.Name}); err != nil {
		return nil, fmt.Errorf("listing the pods of %s's instances: %w", tmpl.Name, err)
	}
	starts := map[client.ObjectKey][]time.Time{}
	for _, pod := range pods.Items {
		name := pod.Labels[ctfv1alpha1.InstanceLabel]
		if name == "" {
			continue
		}
		key := client.ObjectKey{Namespace: pod.Namespace, Name: name}
		starts[key] = append(starts[key], runningSince(&pod)...)
	}
	var out []ServedFlags
	for key, started := range starts {
		if len(started) == 0 {
			continue // nothing runs: what starts next reads the Secret as it is
		}
		s, err := r.servedBy(ctx, tmpl, key, started)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// servedBy is what instance key, whose containers started at started,
// may serve of tmpl's static flags.
func (r *StaticFlagsReconciler) servedBy(ctx context.Context, tmpl *ctfv1alpha1.ChallengeTemplate, key client.ObjectKey, started []time.Time) (ServedFlags, error) {
	s := ServedFlags{Instance: key.String()}
	secret := &corev1.Secret{}
	err := r.Live.Get(ctx, client.ObjectKey{Namespace: key.Namespace, Name: identity.FlagSecret(key.Name)}, secret)
	if apierrors.IsNotFound(err) {
		s.StartedBeforeChange = true // going or not there yet: it may serve anything
		return s, nil
	}
	if err != nil {
		return s, fmt.Errorf("reading the flag Secret of instance %s: %w", key, err)
	}
	s.Digests = map[string]string{}
	for _, f := range tmpl.Spec.Flags {
		if value, ok := secret.Data[values.NamedFlagKey(f.Name)]; ok && f.Static != nil {
			s.Digests[f.Name] = r.Codec.StaticDigest(tmpl.Name, f.Name, string(value))
		}
	}
	s.StartedBeforeChange = StartedBeforeChange(started, secret.CreationTimestamp.Time, lastWrite(secret))
	return s, nil
}

// StartedBeforeChange tells whether a container that started at one of
// started may have read an earlier content of a Secret created at created
// and last written at written. Times are in seconds: a Secret never written
// since its creation has no earlier content, and a container that started
// in the second of the last write may have read what came before it.
func StartedBeforeChange(started []time.Time, created, written time.Time) bool {
	if !written.After(created) {
		return false
	}
	return slices.ContainsFunc(started, func(t time.Time) bool { return !t.After(written) })
}

// lastWrite is the last time a manager wrote secret (its managedFields),
// zero when they say nothing.
func lastWrite(secret *corev1.Secret) time.Time {
	var last time.Time
	for _, m := range secret.ManagedFields {
		if m.Time != nil && m.Time.After(last) {
			last = m.Time.Time
		}
	}
	return last
}

// runningSince is when each running container of pod started.
func runningSince(pod *corev1.Pod) []time.Time {
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return nil
	}
	var out []time.Time
	for _, statuses := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for _, c := range statuses {
			if c.State.Running != nil {
				out = append(out, c.State.Running.StartedAt.Time)
			}
		}
	}
	return out
}

// announce tells the organiser what changes did, on the template: never a
// value, which only the flag's Secret holds.
func (r *StaticFlagsReconciler) announce(tmpl *ctfv1alpha1.ChallengeTemplate, changes []FlagChange) {
	if r.Recorder == nil {
		return
	}
	for _, c := range changes {
		switch {
		case c.Retired != nil && *c.Retired > 0:
			r.Recorder.Eventf(tmpl, nil, corev1.EventTypeWarning, ReasonStaticFlagChanged, "StaticFlags",
				"flag %s changed: %d running instances still serve its previous value, which is still accepted until none does; new instances get the new value, and an instance's pods started again serve it", c.Flag, *c.Retired)
		case c.Retired != nil:
			r.Recorder.Eventf(tmpl, nil, corev1.EventTypeNormal, ReasonStaticFlagChanged, "StaticFlags",
				"flag %s changed: no running instance serves its previous value, which is no longer accepted", c.Flag)
		}
		if c.Dropped > 0 {
			r.Recorder.Eventf(tmpl, nil, corev1.EventTypeNormal, ReasonPreviousStaticFlagDropped, "StaticFlags",
				"flag %s: no running instance serves %d of its previous values any more: they are no longer accepted", c.Flag, c.Dropped)
		}
		if c.Evicted > 0 {
			r.Recorder.Eventf(tmpl, nil, corev1.EventTypeWarning, ReasonPreviousStaticFlagDropped, "StaticFlags",
				"flag %s changed more than %d times while instances served each value: %d of its previous values are no longer accepted though instances still serve them", c.Flag, maxPreviousStaticFlags, c.Evicted)
		}
	}
}

// SetupWithManager watches templates, and the instances' pods going while
// a template holds an earlier value: the last one that served it takes it
// away at once, not at the next refresh.
func (r *StaticFlagsReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Live == nil {
		r.Live = r.Organiser.Client
	}
	cl := mgr.GetClient()
	holding := handler.TypedEnqueueRequestsFromMapFunc(func(ctx context.Context, pod *corev1.Pod) []reconcile.Request {
		name := pod.Labels[ctfv1alpha1.ChallengeLabel]
		tmpl := &ctfv1alpha1.ChallengeTemplate{}
		if name == "" || cl.Get(ctx, client.ObjectKey{Name: name}, tmpl) != nil || !holdsPrevious(tmpl.Status.StaticFlags) {
			return nil
		}
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: name}}}
	})
	gone := predicate.TypedFuncs[*corev1.Pod]{
		CreateFunc:  func(event.TypedCreateEvent[*corev1.Pod]) bool { return false },
		UpdateFunc:  func(event.TypedUpdateEvent[*corev1.Pod]) bool { return false },
		GenericFunc: func(event.TypedGenericEvent[*corev1.Pod]) bool { return false },
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("challengetemplate-static-flags").
		For(&ctfv1alpha1.ChallengeTemplate{}).
		WatchesRawSource(source.Kind(mgr.GetCache(), &corev1.Pod{}, holding, gone)).
		Complete(r)
}
