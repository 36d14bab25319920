package lifecycle

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
)

func TestExpiryAndRenewal(t *testing.T) {
	g := NewWithT(t)
	created := metav1.NewTime(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))
	at := func(d time.Duration) metav1.Time { return metav1.NewTime(created.Add(d)) }
	st := &ctfv1alpha1.ChallengeStatus{}
	o := Observation{Created: created, Lifetime: 30 * time.Minute, MaxRenewals: ptr.To[int32](1)}

	applyExpiry(st, o, 1, at(time.Minute))
	g.Expect(st.ExpiresAt.Time).To(Equal(created.Add(30 * time.Minute)))
	g.Expect(st.Renewals).To(BeZero())

	r1 := at(20 * time.Minute)
	o.RenewedAt = &r1
	applyExpiry(st, o, 2, at(20*time.Minute))
	g.Expect(st.Renewals).To(Equal(int32(1)))
	g.Expect(st.ExpiresAt.Time).To(Equal(created.Add(50*time.Minute)), "a lifetime after the renewal")
	applyExpiry(st, o, 2, at(21*time.Minute))
	g.Expect(st.Renewals).To(Equal(int32(1)), "the same renewal counts once")

	r2 := at(40 * time.Minute)
	o.RenewedAt = &r2
	applyExpiry(st, o, 3, at(40*time.Minute))
	g.Expect(st.Renewals).To(Equal(int32(1)))
	g.Expect(st.ExpiresAt.Time).To(Equal(created.Add(50*time.Minute)), "refused beyond the limit")
	g.Expect(meta.FindStatusCondition(st.Conditions, ConditionRenewed).Reason).To(Equal(ReasonRenewalLimitReached))

	future := at(10 * time.Hour)
	st2 := &ctfv1alpha1.ChallengeStatus{}
	applyExpiry(st2, Observation{Created: created, Lifetime: time.Hour, RenewedAt: &future}, 1, at(5*time.Minute))
	g.Expect(st2.ExpiresAt.Time).To(Equal(created.Add(65*time.Minute)), "a renewal dated in the future counts from now")

	st3 := &ctfv1alpha1.ChallengeStatus{}
	applyExpiry(st3, Observation{Created: created}, 1, at(0))
	g.Expect(st3.ExpiresAt).To(BeNil(), "no lifetime, no expiry")
}
