package lifecycle

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
)

// maxMessage is the limit the API server puts on a condition message.
const maxMessage = 32768

// defaultReason fills the reasons the Helm reconciler leaves empty, which
// metav1.Condition does not allow.
const defaultReason = "AsExpected"

// Apply writes the whole status of a Challenge from the observation: phase,
// reason, message, endpoints, the Ready condition and the once-only
// timestamps. It is the single place where status is decided.
//
// observedGeneration is the generation the Helm reconciler has handled; only
// its own writes advance it, so Ready.observedGeneration never claims a spec
// that has not been rolled out.
func Apply(st *ctfv1alpha1.ChallengeStatus, observedGeneration int64, o Observation, now metav1.Time) {
	held := heldBack(st)
	o.Conditions = normalise(o.Conditions, observedGeneration)
	if o.PooledInstance != nil && !o.PooledInstanceGone {
		claimedConditions(&o.Conditions, o.PooledInstance, observedGeneration)
	}
	o.Conditions = WithoutSilentConditions(o.Conditions, o.PooledInstance != nil)
	v := PhaseFor(o)

	st.Phase, st.Reason, st.Message = v.Phase, v.Reason, truncate(v.Message)
	st.ObservedGeneration = observedGeneration
	st.Conditions = o.Conditions
	meta.SetStatusCondition(&st.Conditions, readyCondition(v, observedGeneration))
	sharedServicesCondition(&st.Conditions, observedGeneration)
	setKstatusConditions(&st.Conditions, v, observedGeneration)
	// One order, by type: the reconciler's conditions come in the order of
	// whichever read they were rebuilt from, and a status that differs only
	// in that order would be written again.
	slices.SortStableFunc(st.Conditions, func(a, b metav1.Condition) int { return strings.Compare(a.Type, b.Type) })

	st.Endpoints = o.Endpoints
	st.Endpoint = nil
	if len(o.Endpoints) > 0 {
		st.Endpoint = o.Endpoints[0].DeepCopy()
	}
	if st.StartedAt == nil && meta.IsStatusConditionTrue(st.Conditions, ConditionDeployed) {
		st.StartedAt = &now
	}
	if st.ReadyAt == nil && v.Phase == ctfv1alpha1.PhaseRunning {
		st.ReadyAt = &now
	}
	st.FlagSecretName = o.FlagSecretName
	st.PooledInstance = o.PooledInstance
	st.QueuePosition = nil
	if v.Phase == ctfv1alpha1.PhaseQueued {
		// A Queued instance always says where it stands: next, when
		// the queue as observed has room and its admission is under way.
		pos := max(o.QueuePosition, 1)
		st.QueuePosition = &pos
	}
	admit(st, held, v, o, now)
	if st.AdmittedAt != nil {
		applyExpiry(st, o, observedGeneration, now)
	}
}

// admit sets admittedAt, once, when the instance is admitted: its release
// is being installed or is installed, its install was tried, or it claimed
// a pooled instance. One that was held back before (Queued, or refused
// with nothing installed) is admitted now; one admitted at its first look,
// or whose expiry an earlier version counted from creation, at its creation.
func admit(st *ctfv1alpha1.ChallengeStatus, held bool, v Verdict, o Observation, now metav1.Time) {
	if st.AdmittedAt != nil {
		return
	}
	if v.Phase != ctfv1alpha1.PhasePending && v.Phase != ctfv1alpha1.PhaseRunning && st.StartedAt == nil &&
		!meta.IsStatusConditionTrue(o.Conditions, ConditionReleaseFailed) {
		return
	}
	at := o.Created
	if held {
		at = now.Rfc3339Copy()
	}
	st.AdmittedAt = &at
}

// heldBack tells whether st, as last written, holds an instance back:
// Queued, or refused, with nothing installed and no expiry counted.
func heldBack(st *ctfv1alpha1.ChallengeStatus) bool {
	return (st.Phase == ctfv1alpha1.PhaseQueued || st.Phase == ctfv1alpha1.PhaseError) && st.StartedAt == nil && st.ExpiresAt == nil
}

// ConditionSharedServices is False while a shared Service the template
// names is missing from under an installed instance, which keeps running
// on its release as it was; absent otherwise.
const ConditionSharedServices = "SharedServicesAvailable"

// sharedServicesCondition says whether an installed instance's shared
// Services are there, from the Helm reconciler's failure to render it.
func sharedServicesCondition(conds *[]metav1.Condition, generation int64) {
	if meta.IsStatusConditionTrue(*conds, ConditionDeployed) {
		for _, t := range []string{ConditionIrreconcilable, ConditionReleaseFailed} {
			c := meta.FindStatusCondition(*conds, t)
			if c == nil || c.Status != metav1.ConditionTrue {
				continue
			}
			if reason, msg, ok := splitReason(c.Message); ok && reason == ReasonSharedServiceNotFound {
				meta.SetStatusCondition(conds, metav1.Condition{Type: ConditionSharedServices, Status: metav1.ConditionFalse,
					Reason: reason, Message: truncate(msg), ObservedGeneration: generation})
				return
			}
		}
	}
	meta.RemoveStatusCondition(conds, ConditionSharedServices)
}

// claimedConditions say what is true of a Challenge that claimed a pooled
// instance: that instance's release is deployed.
func claimedConditions(conds *[]metav1.Condition, pooled *ctfv1alpha1.PooledInstanceRef, generation int64) {
	msg := "claimed " + pooled.Namespace + "/" + pooled.Name + " from the template's pool"
	meta.SetStatusCondition(conds, metav1.Condition{Type: ConditionDeployed, Status: metav1.ConditionTrue, Reason: ReasonClaimed,
		Message: msg, ObservedGeneration: generation})
}

// conditionPaused is helm-operator-plugins' condition for its pause
// annotation, which this operator does not enable: it is always False.
const conditionPaused = "Paused"

// WithoutSilentConditions returns conds without the Helm reconciler's
// conditions that say nothing of the Challenge: Paused, always False here,
// and, on a Challenge that claimed a pooled instance (claimed, whether that
// instance is still there or not), its verdicts on a release of the
// Challenge's own (Irreconcilable, ReleaseFailed), which it never has: its
// refusal to install one is no failure. Each would ride on every status
// write and watch event of every Challenge; a claimant's status is half as
// large without them.
func WithoutSilentConditions(conds []metav1.Condition, claimed bool) []metav1.Condition {
	return slices.DeleteFunc(conds, func(c metav1.Condition) bool {
		return c.Type == conditionPaused ||
			claimed && (c.Type == ConditionIrreconcilable || c.Type == ConditionReleaseFailed)
	})
}

// Installed reports whether the Challenge's release has ever been deployed
// (startedAt is set then, once): quotas admit new instances, never take down
// installed ones.
func Installed(st *ctfv1alpha1.ChallengeStatus) bool { return st.StartedAt != nil }

func readyCondition(v Verdict, generation int64) metav1.Condition {
	c := metav1.Condition{
		Type:               ConditionReady,
		Status:             metav1.ConditionFalse,
		Reason:             v.Reason,
		Message:            truncate(v.Message),
		ObservedGeneration: generation,
	}
	if v.Phase == ctfv1alpha1.PhaseRunning {
		c.Status = metav1.ConditionTrue
	}
	if c.Reason == "" {
		c.Reason = defaultReason
	}
	return c
}

// kstatus's conditions: what Flux, Argo CD and `kubectl wait` read.
const (
	// ConditionReconciling is True while the instance is on its way (None, Queued, Pending).
	ConditionReconciling = "Reconciling"
	// ConditionStalled is True while the instance is in Error: waiting will not help.
	ConditionStalled = "Stalled"
)

// setKstatusConditions follows kstatus's conventions, so that tools that wait
// on a Challenge fail fast on Error instead of timing out: Stalled while in
// Error, Reconciling while None, Queued or Pending, neither once Running (or Deleted,
// which kstatus reads from the deletion timestamp).
func setKstatusConditions(conds *[]metav1.Condition, v Verdict, generation int64) {
	var t string
	switch v.Phase {
	case ctfv1alpha1.PhaseError:
		t = ConditionStalled
	case ctfv1alpha1.PhaseNone, ctfv1alpha1.PhaseQueued, ctfv1alpha1.PhasePending:
		t = ConditionReconciling
	}
	// The one that stays keeps its lastTransitionTime (SetStatusCondition
	// moves it only when the status changes): removed and set again, it
	// moved at every recompute, and every recompute was a status write.
	for _, other := range []string{ConditionReconciling, ConditionStalled} {
		if other != t {
			meta.RemoveStatusCondition(conds, other)
		}
	}
	if t == "" {
		return
	}
	reason := v.Reason
	if reason == "" {
		reason = defaultReason
	}
	meta.SetStatusCondition(conds, metav1.Condition{Type: t, Status: metav1.ConditionTrue, Reason: reason,
		Message: truncate(v.Message), ObservedGeneration: generation})
}

// normalise makes the reconciler's conditions valid metav1.Conditions of this generation.
func normalise(in []metav1.Condition, generation int64) []metav1.Condition {
	out := make([]metav1.Condition, 0, len(in))
	for _, c := range in {
		if c.Reason == "" {
			c.Reason = defaultReason
		}
		if c.LastTransitionTime.IsZero() {
			c.LastTransitionTime = metav1.Now()
		}
		c.Message = truncate(c.Message)
		c.ObservedGeneration = generation
		out = append(out, c)
	}
	return out
}

func truncate(s string) string {
	if len(s) <= maxMessage {
		return s
	}
	return s[:maxMessage-3] + "..."
}
