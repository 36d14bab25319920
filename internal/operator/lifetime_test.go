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
			ch := newChallenge(ns, "lifetime-"+strconv.Itoa(i), "team-l"+strconv.Itoa(i))
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
// extend the instance without a renewal.
func TestRenewalBudgetCannotBeReset(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t)
	newTemplate(t, "tpl-budget", func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.Lifetime = &ctfv1alpha1.LifetimePolicy{Default: &metav1.Duration{Duration: time.Hour}, MaxRenewals: ptr.To[int32](1)}
	})
	ch := fromTemplate(ns, "budget", "team-b", "tpl-budget")
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
	tmpl := newTemplate(t, "tpl-shorten", func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.Lifetime = &ctfv1alpha1.LifetimePolicy{Default: &metav1.Duration{Duration: time.Hour}, MaxRenewals: ptr.To[int32](2)}
		s.OverridableValues = []ctfv1alpha1.ValuePath{"env"}
	})
	old := fromTemplate(ns, "running", "team-s", tmpl.Name)
	g.Expect(k8s.Create(ctx, old)).To(Succeed())
	got := eventuallyPhase(t, old, ctfv1alpha1.PhaseRunning)
	given := got.Status.ExpiresAt.Time
	g.Expect(given).To(BeTemporally("==", got.CreationTimestamp.Add(time.Hour)))

	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(tmpl), tmpl)).To(Succeed())
	tmpl.Spec.Lifetime.Default = &metav1.Duration{Duration: shorter}
	g.Expect(k8s.Update(ctx, tmpl)).To(Succeed())

	// A new instance gets the shorter lifetime: the change is seen.
	fresh := fromTemplate(ns, "fresh", "team-t", tmpl.Name)
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
