package lifecycle

import (
	"encoding/json"
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

// TestEveryRenewalCountsOnce writes the status again and again, as the
// operator does, with renewals dated in the future, the past, the same time,
// a second ahead of the operator's clock, and with a fraction of a second (as
// JavaScript writes them). Each write goes through JSON, as the API server
// stores the status: to the second.
func TestEveryRenewalCountsOnce(t *testing.T) {
	created := metav1.NewTime(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))
	at := func(d time.Duration) metav1.Time { return metav1.NewTime(created.Add(d)) }
	tests := []struct {
		name       string
		renewedAt  metav1.Time
		seenAt     metav1.Time
		wantExpiry time.Time
	}{
		{"in the future", at(time.Hour), at(10 * time.Minute), created.Add(40 * time.Minute)},
		{"a second of clock skew", at(10*time.Minute + time.Second), at(10 * time.Minute), created.Add(40 * time.Minute)},
		{"in the past", at(5 * time.Minute), at(10 * time.Minute), created.Add(35 * time.Minute)},
		{"now", at(10 * time.Minute), at(10 * time.Minute), created.Add(40 * time.Minute)},
		{"with a fraction of a second", at(5*time.Minute + 500*time.Millisecond), at(10 * time.Minute), created.Add(35 * time.Minute)},
		{"in the future with a fraction", at(time.Hour + 999*time.Millisecond), at(10*time.Minute + 250*time.Millisecond), created.Add(40 * time.Minute)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			st := &ctfv1alpha1.ChallengeStatus{}
			o := Observation{Created: created, Lifetime: 30 * time.Minute, RenewedAt: &tt.renewedAt}
			applyExpiry(st, o, 2, tt.seenAt)
			for later := time.Duration(0); later < 3*time.Minute; later += 20 * time.Second {
				st = stored(t, st)
				applyExpiry(st, o, 2, metav1.NewTime(tt.seenAt.Add(later)))
			}
			g.Expect(st.Renewals).To(Equal(int32(1)), "counted once, without a limit")
			g.Expect(st.ExpiresAt.Time).To(BeTemporally("==", tt.wantExpiry))

			limited := &ctfv1alpha1.ChallengeStatus{}
			o.MaxRenewals = ptr.To[int32](2)
			for later := time.Duration(0); later < time.Minute; later += 10 * time.Second {
				applyExpiry(limited, o, 2, metav1.NewTime(tt.seenAt.Add(later)))
				limited = stored(t, limited)
			}
			g.Expect(limited.Renewals).To(Equal(int32(1)), "one renewal burns one of the two allowed")
			g.Expect(meta.IsStatusConditionTrue(limited.Conditions, ConditionRenewed)).To(BeTrue())
		})
	}
}

func TestExpiryKeptWhileTheLifetimeIsUnknown(t *testing.T) {
	g := NewWithT(t)
	created := metav1.NewTime(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))
	st := &ctfv1alpha1.ChallengeStatus{}
	applyExpiry(st, Observation{Created: created, Lifetime: time.Hour, MaxRenewals: ptr.To[int32](0)}, 1, created)
	expiry := st.ExpiresAt.DeepCopy()

	renewal := metav1.NewTime(created.Add(time.Minute))
	applyExpiry(st, Observation{Created: created, LifetimeUnknown: true, RenewedAt: &renewal}, 2, metav1.NewTime(created.Add(time.Minute)))
	g.Expect(st.ExpiresAt).To(Equal(expiry), "the template is gone: the instance still expires")
	g.Expect(st.Renewals).To(BeZero(), "and renewals wait for the limit to be known")

	applyExpiry(st, Observation{Created: created, Lifetime: time.Hour, MaxRenewals: ptr.To[int32](0), RenewedAt: &renewal}, 2, metav1.NewTime(created.Add(2*time.Minute)))
	g.Expect(st.Renewals).To(BeZero(), "refused once the limit is known again")
	g.Expect(st.ExpiresAt).To(Equal(expiry))
}

// stored is st as written to and read back from the API server (JSON).
func stored(t *testing.T, st *ctfv1alpha1.ChallengeStatus) *ctfv1alpha1.ChallengeStatus {
	t.Helper()
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	out := &ctfv1alpha1.ChallengeStatus{}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestExpiryMovesOnlyByTheInstancesOwnChoice: once set, expiresAt moves at a
// renewal (with the lifetime in force then) or earlier with the Challenge's
// own lowered spec.lifetime; a template's lifetime change waits for the next
// renewal, so shortening it never deletes running instances at once.
func TestExpiryMovesOnlyByTheInstancesOwnChoice(t *testing.T) {
	created := metav1.NewTime(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))
	at := func(d time.Duration) *metav1.Time { t := metav1.NewTime(created.Add(d)); return &t }
	tests := []struct {
		name string
		st   ctfv1alpha1.ChallengeStatus
		o    Observation
		want *metav1.Time
	}{
		{"first computed: a lifetime after creation",
			ctfv1alpha1.ChallengeStatus{}, Observation{Lifetime: time.Hour}, at(time.Hour)},
		{"template lifetime lowered: kept",
			ctfv1alpha1.ChallengeStatus{ExpiresAt: at(time.Hour)}, Observation{Lifetime: 10 * time.Minute}, at(time.Hour)},
		{"template lifetime raised: kept",
			ctfv1alpha1.ChallengeStatus{ExpiresAt: at(time.Hour)}, Observation{Lifetime: 2 * time.Hour}, at(time.Hour)},
		{"template lifetime removed: kept",
			ctfv1alpha1.ChallengeStatus{ExpiresAt: at(time.Hour)}, Observation{}, at(time.Hour)},
		{"template lifetime raised, then a renewal: the new lifetime after it",
			ctfv1alpha1.ChallengeStatus{ExpiresAt: at(time.Hour)}, Observation{Lifetime: 2 * time.Hour, RenewedAt: at(20 * time.Minute)}, at(140 * time.Minute)},
		{"template lifetime lowered, then a renewal: the new lifetime after it",
			ctfv1alpha1.ChallengeStatus{ExpiresAt: at(time.Hour)}, Observation{Lifetime: 10 * time.Minute, RenewedAt: at(20 * time.Minute)}, at(30 * time.Minute)},
		{"own lifetime lowered: earlier at once",
			ctfv1alpha1.ChallengeStatus{ExpiresAt: at(time.Hour)}, Observation{Lifetime: 10 * time.Minute, OwnLifetime: true}, at(10 * time.Minute)},
		{"own lifetime unchanged: kept",
			ctfv1alpha1.ChallengeStatus{ExpiresAt: at(time.Hour)}, Observation{Lifetime: time.Hour, OwnLifetime: true}, at(time.Hour)},
		{"a running instance given a lifetime by its template: a full one from now",
			ctfv1alpha1.ChallengeStatus{ReadyAt: at(time.Minute)}, Observation{Lifetime: time.Hour}, at(90 * time.Minute)},
		{"first computed: a lifetime after admission",
			ctfv1alpha1.ChallengeStatus{AdmittedAt: at(10 * time.Second)}, Observation{Lifetime: time.Hour}, at(time.Hour + 10*time.Second)},
		{"own lifetime lowered: counted from admission",
			ctfv1alpha1.ChallengeStatus{AdmittedAt: at(10 * time.Minute), ExpiresAt: at(70 * time.Minute)}, Observation{Lifetime: 15 * time.Minute, OwnLifetime: true}, at(25 * time.Minute)},
		{"a renewal made while waiting: counted from admission",
			ctfv1alpha1.ChallengeStatus{AdmittedAt: at(10 * time.Minute)}, Observation{Lifetime: time.Hour, RenewedAt: at(5 * time.Minute)}, at(70 * time.Minute)},
		{"template maximum lowered: capped at admission plus the maximum",
			ctfv1alpha1.ChallengeStatus{AdmittedAt: at(time.Minute), ExpiresAt: at(time.Minute + 700*time.Hour)},
			Observation{Lifetime: 700 * time.Hour, OwnLifetime: true, MaxLifetime: 20 * time.Minute}, at(21 * time.Minute)},
		{"template maximum lowered after a renewal: capped at the renewal plus the maximum",
			ctfv1alpha1.ChallengeStatus{AdmittedAt: at(0), RenewedAt: at(5 * time.Minute), Renewals: 1, ExpiresAt: at(65 * time.Minute)},
			Observation{Lifetime: time.Hour, MaxLifetime: 20 * time.Minute}, at(25 * time.Minute)},
		{"template maximum above the expiry: kept",
			ctfv1alpha1.ChallengeStatus{AdmittedAt: at(0), ExpiresAt: at(time.Hour)}, Observation{Lifetime: time.Hour, MaxLifetime: 2 * time.Hour}, at(time.Hour)},
		{"own lifetime above the maximum, first computed: the maximum",
			ctfv1alpha1.ChallengeStatus{AdmittedAt: at(0)}, Observation{Lifetime: 700 * time.Hour, OwnLifetime: true, MaxLifetime: 20 * time.Minute}, at(20 * time.Minute)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			tt.o.Created = created
			st := tt.st.DeepCopy()
			applyExpiry(st, tt.o, 1, *at(30 * time.Minute))
			g.Expect(st.ExpiresAt).NotTo(BeNil())
			g.Expect(st.ExpiresAt.Time).To(BeTemporally("==", tt.want.Time))
		})
	}
}

// TestLifetimeCountsFromAdmission: an instance that never waited is
// admitted at its creation; one that waited in the queue, or was refused
// with nothing installed, at the moment it leaves the wait, and no expiry
// runs before. An instance whose expiry an earlier version counted from
// creation keeps it.
func TestLifetimeCountsFromAdmission(t *testing.T) {
	created := metav1.NewTime(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))
	at := func(d time.Duration) metav1.Time { return metav1.NewTime(created.Add(d)) }
	queued := cond(ConditionIrreconcilable, metav1.ConditionTrue, "ReconcileError", "terminal error: Queued: position 1: waiting for capacity")
	refused := cond(ConditionIrreconcilable, metav1.ConditionTrue, "ReconcileError", "terminal error: ValueNotAllowed: env")
	failed := cond(ConditionReleaseFailed, metav1.ConditionTrue, "InstallError", "boom")
	ready := func(o Observation) Observation {
		o.Conditions = []metav1.Condition{deployed}
		o.Workloads = []Workload{{Kind: "Deployment", Name: "web", Status: "Current"}}
		o.Endpoints = []ctfv1alpha1.Endpoint{{Address: "web:1337"}}
		return o
	}
	base := Observation{Created: created, Lifetime: time.Hour}
	tests := []struct {
		name         string
		steps        []Observation // each written 10 s after the one before
		st           ctfv1alpha1.ChallengeStatus
		wantAdmitted *time.Duration
	}{
		{"never waited: from creation", []Observation{{Operation: Installing}, ready(base)}, ctfv1alpha1.ChallengeStatus{}, ptr.To(time.Duration(0))},
		{"queued, then installed: from leaving the queue",
			[]Observation{{Conditions: []metav1.Condition{queued}}, {Conditions: []metav1.Condition{queued}}, ready(base)}, ctfv1alpha1.ChallengeStatus{}, ptr.To(30 * time.Second)},
		{"queued, then installing: from the install's start",
			[]Observation{{Conditions: []metav1.Condition{queued}}, {Operation: Installing}}, ctfv1alpha1.ChallengeStatus{}, ptr.To(20 * time.Second)},
		{"refused, then fixed: from the fix",
			[]Observation{{Conditions: []metav1.Condition{refused}}, {Operation: Installing}}, ctfv1alpha1.ChallengeStatus{}, ptr.To(20 * time.Second)},
		{"still queued: not admitted", []Observation{{Conditions: []metav1.Condition{queued}}, {Conditions: []metav1.Condition{queued}}}, ctfv1alpha1.ChallengeStatus{}, nil},
		{"still refused: not admitted", []Observation{{Conditions: []metav1.Condition{refused}}}, ctfv1alpha1.ChallengeStatus{}, nil},
		{"install failed: admitted at creation", []Observation{{Operation: Installing}, {Conditions: []metav1.Condition{failed}}}, ctfv1alpha1.ChallengeStatus{}, ptr.To(time.Duration(0))},
		{"expiry counted by an earlier version: from creation",
			[]Observation{ready(base)}, ctfv1alpha1.ChallengeStatus{Phase: ctfv1alpha1.PhaseQueued, ExpiresAt: ptr.To(at(time.Hour))}, ptr.To(time.Duration(0))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			st := tt.st.DeepCopy()
			for i, o := range tt.steps {
				o.Created, o.Lifetime = created, base.Lifetime
				Apply(st, 1, o, at(time.Duration(i+1)*10*time.Second))
				st = stored(t, st)
			}
			if tt.wantAdmitted == nil {
				g.Expect(st.AdmittedAt).To(BeNil())
				g.Expect(st.ExpiresAt).To(BeNil(), "no lifetime runs while the instance waits")
				return
			}
			g.Expect(st.AdmittedAt).NotTo(BeNil())
			g.Expect(st.AdmittedAt.Time).To(BeTemporally("==", created.Add(*tt.wantAdmitted)))
			g.Expect(st.ExpiresAt).NotTo(BeNil())
			g.Expect(st.ExpiresAt.Time).To(BeTemporally("==", st.AdmittedAt.Add(time.Hour)))
		})
	}
}
