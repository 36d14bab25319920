package operator_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/test/builders"
	"github.com/challenge-operator/challenge-operator/test/harness"
)

// TestLifetimeCanOnlyBeLoweredAfterCreation: a platform may shorten an
// instance's own lifetime, never lengthen it (that is what renewals, which
// the template counts, are for), nor add or remove it, which would fall back
// to or replace the template's.
func TestLifetimeCanOnlyBeLoweredAfterCreation(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	tests := []struct {
		name     string
		created  string // the lifetime at creation; empty for none
		patch    string // spec.lifetime as JSON, null to remove it
		accepted bool
	}{
		{"raised from 10m to 720h", "10m", `"720h"`, false},
		{"raised by a second", "10m", `"601s"`, false},
		{"removed", "10m", `null`, false},
		{"added", "", `"10m"`, false},
		{"lowered", "10m", `"5m"`, true},
		{"the same in other units", "10m", `"600s"`, true},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ch := builders.Challenge(ns, "lifetime-"+strconv.Itoa(i), "team-l"+strconv.Itoa(i))
			if tt.created != "" {
				ch.Spec.Lifetime = duration(tt.created)
			}
			g.Expect(k8s.Create(ctx, ch)).To(Succeed())
			t.Cleanup(func() { _ = k8s.Delete(ctx, ch) })
			err := k8s.Patch(ctx, ch, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"lifetime":`+tt.patch+`}}`)))
			if tt.accepted {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
			g.Expect(err.Error()).To(ContainSubstring("spec.lifetime can only be lowered"))
		})
	}
}

// TestRenewalBudgetCannotBeReset: whoever can write the status cannot give
// back spent renewals, by lowering or removing status.renewals or by moving
// status.lastRenewalRequest back so that an old renewedAt counts again, nor
// extend the instance without a renewal, nor move its admission.
func TestRenewalBudgetCannotBeReset(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t)
	h.Template(t, "tpl-budget", func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.Lifetime = &ctfv1alpha1.LifetimePolicy{Default: &metav1.Duration{Duration: time.Hour}, MaxRenewals: ptr.To[int32](1)}
	})
	ch := builders.FromTemplate(ns, "budget", "team-b", "tpl-budget")
	g.Expect(k8s.Create(ctx, ch)).To(Succeed())
	got := eventuallyPhase(t, ch, ctfv1alpha1.PhaseRunning)
	renewedAt := metav1.NewTime(time.Now().Add(-time.Minute).Truncate(time.Second))
	patch := client.MergeFrom(got.DeepCopy())
	got.Spec.RenewedAt = &renewedAt
	g.Expect(k8s.Patch(ctx, got, patch)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(ch), got)).To(Succeed())
		g.Expect(got.Status.Renewals).To(Equal(int32(1)))
	}, timeout, interval).Should(Succeed())

	for _, tt := range []struct{ name, status, message string }{
		{"renewals set to 0", `{"renewals":0}`, "status.renewals cannot decrease"},
		{"renewals removed", `{"renewals":null}`, "status.renewals cannot decrease"},
		{"lastRenewalRequest removed", `{"lastRenewalRequest":null}`, "status.lastRenewalRequest cannot be removed or move back"},
		{"lastRenewalRequest moved back", `{"lastRenewalRequest":"2020-01-01T00:00:00Z"}`, "status.lastRenewalRequest cannot be removed or move back"},
		{"expiresAt moved later", `{"expiresAt":"2100-01-01T00:00:00Z"}`, "status.expiresAt can only move later, or be removed, with a renewal"},
		{"expiresAt removed", `{"expiresAt":null}`, "status.expiresAt can only move later, or be removed, with a renewal"},
		{"admittedAt moved later", `{"admittedAt":"2100-01-01T00:00:00Z"}`, "status.admittedAt cannot change once set"},
		{"admittedAt removed", `{"admittedAt":null}`, "status.admittedAt cannot change once set"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			err := k8s.Status().Patch(ctx, got.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(`{"status":`+tt.status+`}`)))
			g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
			g.Expect(err.Error()).To(ContainSubstring(tt.message))
		})
	}

	// The budget is still spent: the next renewal is refused.
	later := metav1.NewTime(renewedAt.Add(time.Second))
	patch = client.MergeFrom(got.DeepCopy())
	got.Spec.RenewedAt = &later
	g.Expect(k8s.Patch(ctx, got, patch)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(ch), got)).To(Succeed())
		c := meta.FindStatusCondition(got.Status.Conditions, "Renewed")
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal("RenewalLimitReached"))
	}, timeout, interval).Should(Succeed())
	g.Expect(got.Status.Renewals).To(Equal(int32(1)))
}

// TestTemplateLifetimeChangeWaitsForTheNextRenewal: an organiser shortening
// a template's lifetime gives new instances the shorter one and running
// instances keep the expiresAt they were given, until their next renewal,
// which counts with the new lifetime.
func TestTemplateLifetimeChangeWaitsForTheNextRenewal(t *testing.T) {
	const shorter = 2 * time.Minute
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t)
	tmpl := h.Template(t, "tpl-shorten", func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.Lifetime = &ctfv1alpha1.LifetimePolicy{Default: &metav1.Duration{Duration: time.Hour}, MaxRenewals: ptr.To[int32](2)}
		s.OverridableValues = []ctfv1alpha1.ValuePath{"env"}
	})
	old := builders.FromTemplate(ns, "running", "team-s", tmpl.Name)
	g.Expect(k8s.Create(ctx, old)).To(Succeed())
	got := eventuallyPhase(t, old, ctfv1alpha1.PhaseRunning)
	given := got.Status.ExpiresAt.Time
	g.Expect(given).To(BeTemporally("==", got.CreationTimestamp.Add(time.Hour)))

	g.Expect(harness.EditTemplate(ctx, k8s, tmpl, func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.Lifetime.Default = &metav1.Duration{Duration: shorter}
	})).To(Succeed())

	// A new instance gets the shorter lifetime: the change is seen.
	fresh := builders.FromTemplate(ns, "fresh", "team-t", tmpl.Name)
	g.Expect(k8s.Create(ctx, fresh)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(fresh), fresh)).To(Succeed())
		g.Expect(fresh.Status.ExpiresAt).NotTo(BeNil())
		g.Expect(fresh.Status.ExpiresAt.Time).To(BeTemporally("==", fresh.CreationTimestamp.Add(shorter)))
	}, timeout, interval).Should(Succeed())

	// The running one is written again (an upgrade) and keeps its expiry.
	patch := client.MergeFrom(got.DeepCopy())
	got.Spec.Env = []ctfv1alpha1.EnvVar{{Name: "CHURN", Value: "1"}}
	g.Expect(k8s.Patch(ctx, got, patch)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(old), got)).To(Succeed())
		g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
		g.Expect(got.Status.Phase).To(Equal(ctfv1alpha1.PhaseRunning))
	}, timeout, interval).Should(Succeed())
	g.Expect(got.Status.ExpiresAt.Time).To(BeTemporally("==", given), "kept until the next renewal")

	// Its next renewal counts with the template's new lifetime.
	renewedAt := metav1.NewTime(time.Now().Truncate(time.Second))
	patch = client.MergeFrom(got.DeepCopy())
	got.Spec.RenewedAt = &renewedAt
	g.Expect(k8s.Patch(ctx, got, patch)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(old), got)).To(Succeed())
		g.Expect(got.Status.Renewals).To(Equal(int32(1)))
		g.Expect(got.Status.ExpiresAt.Time).To(BeTemporally("==", renewedAt.Add(shorter)))
	}, timeout, interval).Should(Succeed())
}

// TestLifetimeCountsFromAdmission: with room for one instance, the second
// waits Queued without an expiry; the first expires, the second is
// admitted, and its lifetime counts from then (status.admittedAt), so it
// runs a whole lifetime, not what the wait left of it.
func TestLifetimeCountsFromAdmission(t *testing.T) {
	const lifetime = 10 * time.Second
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t)
	h.Template(t, "tpl-admit", func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.MaxInstances = ptr.To[int32](1)
		s.Lifetime = &ctfv1alpha1.LifetimePolicy{Default: &metav1.Duration{Duration: lifetime}}
	})
	first := builders.FromTemplate(ns, "first", "team-admit-1", "tpl-admit")
	g.Expect(k8s.Create(ctx, first)).To(Succeed())
	got := eventuallyPhase(t, first, ctfv1alpha1.PhaseRunning)
	g.Expect(got.Status.ExpiresAt.Time).To(BeTemporally("==", got.CreationTimestamp.Add(lifetime)))

	waiting := builders.FromTemplate(ns, "waiting", "team-admit-2", "tpl-admit")
	g.Expect(k8s.Create(ctx, waiting)).To(Succeed())
	queued := eventuallyPhase(t, waiting, ctfv1alpha1.PhaseQueued)
	g.Expect(queued.Status.ExpiresAt).To(BeNil(), "no lifetime runs in the queue")
	g.Expect(queued.Status.AdmittedAt).To(BeNil())
	g.Expect(got.Status.AdmittedAt).NotTo(BeNil())
	g.Expect(got.Status.AdmittedAt.Time).To(BeTemporally("==", got.CreationTimestamp.Time), "the first was admitted at creation: it never waited")

	// A renewal while it waits is no install: it stays Queued, unadmitted.
	rec := record(t, ns, "waiting")
	renewNow(t, queued)
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(waiting), queued)).To(Succeed())
		g.Expect(queued.Status.ObservedGeneration).To(Equal(queued.Generation))
	}, timeout, interval).Should(Succeed())
	g.Expect(queued.Status.AdmittedAt).To(BeNil())
	g.Expect(rec.phases()).To(HaveEach(ctfv1alpha1.PhaseQueued), "never Pending while it waits")

	// The first expires; the second is admitted then and lives a lifetime.
	admitted := &ctfv1alpha1.Challenge{}
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(waiting), admitted)).To(Succeed())
		g.Expect(admitted.Status.Phase).To(Equal(ctfv1alpha1.PhaseRunning))
	}, timeout, interval).Should(Succeed())
	g.Expect(admitted.Status.AdmittedAt).NotTo(BeNil())
	g.Expect(admitted.Status.AdmittedAt.Time).To(BeTemporally(">=", got.Status.ExpiresAt.Time), "admitted once the first was gone")
	g.Expect(admitted.Status.ExpiresAt.Time).To(BeTemporally("==", admitted.Status.AdmittedAt.Add(lifetime)))
	g.Eventually(func() bool {
		return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(waiting), &ctfv1alpha1.Challenge{}))
	}, timeout, 20*time.Millisecond).Should(BeTrue())
	ran := time.Since(admitted.Status.AdmittedAt.Time)
	t.Logf("queued %s, then ran %s of a %s lifetime", admitted.Status.AdmittedAt.Sub(admitted.CreationTimestamp.Time), ran, lifetime)
	g.Expect(ran).To(BeNumerically(">=", lifetime), "a whole lifetime after admission")
}

// TestLoweredMaximumCapsRunningInstances: an organiser lowering a
// template's lifetime.max caps the expiry of its running instances at
// admission plus the new maximum, and they stay Running; a new instance
// asking more than the maximum is still refused.
func TestLoweredMaximumCapsRunningInstances(t *testing.T) {
	const own, lowered = 50 * time.Minute, 20 * time.Minute
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t)
	tmpl := h.Template(t, "tpl-max-lowered", func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.Lifetime = &ctfv1alpha1.LifetimePolicy{Max: &metav1.Duration{Duration: time.Hour}}
	})
	ch := builders.FromTemplate(ns, "long", "team-max", tmpl.Name)
	ch.Spec.Lifetime = &metav1.Duration{Duration: own}
	g.Expect(k8s.Create(ctx, ch)).To(Succeed())
	got := eventuallyPhase(t, ch, ctfv1alpha1.PhaseRunning)
	g.Expect(got.Status.ExpiresAt.Time).To(BeTemporally("==", got.CreationTimestamp.Add(own)))

	g.Expect(harness.EditTemplate(ctx, k8s, tmpl, func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.Lifetime.Max = &metav1.Duration{Duration: lowered}
	})).To(Succeed())
	// It never waited: its lifetime counts from its creation. The Helm
	// reconciler reconciles the template's instances and writes the
	// outcome with the capped expiry in one status.
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(ch), got)).To(Succeed())
		g.Expect(got.Status.ExpiresAt.Time).To(BeTemporally("==", got.CreationTimestamp.Add(lowered)))
	}, timeout, interval).Should(Succeed())
	g.Expect(got.Status.Phase).To(Equal(ctfv1alpha1.PhaseRunning), "%s: %s", got.Status.Reason, got.Status.Message)

	// A change that rolls a new release out judges the lifetime again: kept.
	patch := client.MergeFrom(got.DeepCopy())
	got.Spec.Lifetime = &metav1.Duration{Duration: own - time.Minute}
	g.Expect(k8s.Patch(ctx, got, patch)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(ch), got)).To(Succeed())
		g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
	}, timeout, interval).Should(Succeed())
	g.Expect(got.Status.Phase).To(Equal(ctfv1alpha1.PhaseRunning), "%s: %s", got.Status.Reason, got.Status.Message)
	g.Expect(got.Status.ExpiresAt.Time).To(BeTemporally("==", got.CreationTimestamp.Add(lowered)))

	fresh := builders.FromTemplate(ns, "fresh", "team-max-2", tmpl.Name)
	fresh.Spec.Lifetime = &metav1.Duration{Duration: own}
	g.Expect(k8s.Create(ctx, fresh)).To(Succeed())
	g.Expect(eventuallyPhase(t, fresh, ctfv1alpha1.PhaseError).Status.Reason).To(Equal("LifetimeTooLong"))
}
