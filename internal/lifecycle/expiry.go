package lifecycle

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
)

// ConditionRenewed says whether the last spec.renewedAt was accepted.
const ConditionRenewed = "Renewed"

// Reasons of the Renewed condition.
const (
	ReasonRenewed             = "Renewed"
	ReasonRenewalLimitReached = "RenewalLimitReached"
)

// applyExpiry accepts a new renewal within the limit and sets expiresAt: a
// lifetime after the last accepted renewal, or after admission (admittedAt;
// creation while it is unset). A renewal dated in the future counts from
// now, so nobody renews in advance; each spec.renewedAt is counted once,
// however often the status is written. While the lifetime is unknown (the
// template is gone) nothing changes.
//
// expiresAt is set when first computed and at each accepted renewal, from
// the lifetime in force then. Between renewals only the Challenge's own
// spec.lifetime, which may only be lowered, and the template's maximum move
// it (earlier): an organiser lowering the maximum caps running instances at
// it, counted from the same start; a change of the template's default
// applies to new instances and at the next renewal, so an organiser
// shortening it never deletes running instances at once. An instance that
// ran without a lifetime and gets one from its template has a full lifetime
// from then, within the template's maximum.
//
// Times are compared to the second: the status is stored to the second
// (metav1.Time), while spec.renewedAt may carry a fraction (JavaScript's
// toISOString writes one), and compared as read it would be later than its
// stored self at every write and counted again each time.
func applyExpiry(st *ctfv1alpha1.ChallengeStatus, o Observation, generation int64, now metav1.Time) {
	if o.LifetimeUnknown {
		return
	}
	now = now.Rfc3339Copy()
	renewed := applyRenewal(st, o, generation, now)
	if o.Lifetime <= 0 {
		if renewed {
			st.ExpiresAt = nil
		}
		return
	}
	lifetime := o.Lifetime
	if o.MaxLifetime > 0 {
		lifetime = min(lifetime, o.MaxLifetime)
	}
	base := lifetimeStart(st, o)
	at := metav1.NewTime(base.Add(lifetime))
	switch {
	case renewed: // a lifetime after the renewal
	case st.ExpiresAt == nil && st.ReadyAt != nil && st.ReadyAt.Before(&now):
		at = metav1.NewTime(now.Add(lifetime)) // the template gave a running instance a lifetime
	case st.ExpiresAt == nil: // first computed
	case o.OwnLifetime && at.Before(st.ExpiresAt): // spec.lifetime lowered
	case o.MaxLifetime > 0 && st.ExpiresAt.After(base.Add(o.MaxLifetime)):
		at = metav1.NewTime(base.Add(o.MaxLifetime)) // the template's maximum lowered
	default:
		return // kept: a change of the template's default waits for the next renewal
	}
	st.ExpiresAt = &at
}

// lifetimeStart is when the lifetime in force began: the last accepted
// renewal, else admission (creation while admittedAt is unset). A renewal
// in the past counts from its date; one made while the instance waited
// counts from admission (applyRenewal).
func lifetimeStart(st *ctfv1alpha1.ChallengeStatus, o Observation) metav1.Time {
	switch {
	case st.RenewedAt != nil:
		return *st.RenewedAt
	case st.AdmittedAt != nil:
		return *st.AdmittedAt
	}
	return o.Created
}

// applyRenewal counts a new spec.renewedAt, accepted within the limit or
// refused, and reports whether it was accepted.
func applyRenewal(st *ctfv1alpha1.ChallengeStatus, o Observation, generation int64, now metav1.Time) bool {
	r := toSecond(o.RenewedAt)
	if r == nil || (st.LastRenewalRequest != nil && !r.After(st.LastRenewalRequest.Time)) {
		return false
	}
	st.LastRenewalRequest = r
	if o.MaxRenewals != nil && st.Renewals >= *o.MaxRenewals {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{
			Type: ConditionRenewed, Status: metav1.ConditionFalse, Reason: ReasonRenewalLimitReached, ObservedGeneration: generation,
			Message: fmt.Sprintf("renewal refused: the limit of %d renewals is reached", *o.MaxRenewals),
		})
		return false
	}
	at := *r
	if at.After(now.Time) {
		at = now
	}
	if st.ExpiresAt == nil && st.AdmittedAt != nil && at.Before(st.AdmittedAt) {
		// Counted as the first expiry is: at admission. A renewal made while
		// the instance waited gives it nothing before its lifetime begins.
		at = *st.AdmittedAt
	}
	st.RenewedAt = &at
	st.Renewals++
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{
		Type: ConditionRenewed, Status: metav1.ConditionTrue, Reason: ReasonRenewed, ObservedGeneration: generation,
		Message: fmt.Sprintf("renewal %d accepted at %s", st.Renewals, at.UTC().Format("2006-01-02T15:04:05Z")),
	})
	return true
}

// toSecond is t as the status stores it, to the second; nil stays nil.
func toSecond(t *metav1.Time) *metav1.Time {
	if t == nil {
		return nil
	}
	s := t.Rfc3339Copy()
	return &s
}
