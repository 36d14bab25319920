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
// lifetime after the last accepted renewal, or after creation. A renewal
// dated in the future counts from now, so nobody renews in advance; each
// spec.renewedAt is counted once, however often the status is written. While
// the lifetime is unknown (the template is gone) nothing changes.
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
	if r := toSecond(o.RenewedAt); r != nil && (st.LastRenewalRequest == nil || r.After(st.LastRenewalRequest.Time)) {
		st.LastRenewalRequest = r
		if o.MaxRenewals == nil || st.Renewals < *o.MaxRenewals {
			at := *r
			if at.After(now.Time) {
				at = now
			}
			st.RenewedAt = &at
			st.Renewals++
			meta.SetStatusCondition(&st.Conditions, metav1.Condition{
				Type: ConditionRenewed, Status: metav1.ConditionTrue, Reason: ReasonRenewed, ObservedGeneration: generation,
				Message: fmt.Sprintf("renewal %d accepted at %s", st.Renewals, at.UTC().Format("2006-01-02T15:04:05Z")),
			})
		} else {
			meta.SetStatusCondition(&st.Conditions, metav1.Condition{
				Type: ConditionRenewed, Status: metav1.ConditionFalse, Reason: ReasonRenewalLimitReached, ObservedGeneration: generation,
				Message: fmt.Sprintf("renewal refused: the limit of %d renewals is reached", *o.MaxRenewals),
			})
		}
	}
	st.ExpiresAt = nil
	if o.Lifetime > 0 {
		base := o.Created
		if st.RenewedAt != nil {
			base = *st.RenewedAt
		}
		at := metav1.NewTime(base.Add(o.Lifetime))
		st.ExpiresAt = &at
	}
}

// toSecond is t as the status stores it, to the second; nil stays nil.
func toSecond(t *metav1.Time) *metav1.Time {
	if t == nil {
		return nil
	}
	s := t.Rfc3339Copy()
	return &s
}
