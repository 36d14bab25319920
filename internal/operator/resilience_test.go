package operator_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/test/builders"
)

// TestWorstAdmittedValuesNeverStopTheOperator stores a Challenge with the
// worst values the CRD admits (every bound at its edge, a quantity too large
// to render, the longest lifetime, an odd but valid renewedAt) and proves
// that a freshly started operator, whose informers must decode it, still
// reconciles everyone else's.
func TestWorstAdmittedValuesNeverStopTheOperator(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t)
	worst := builders.Challenge(ns, "worst", "worst-team")
	worst.Spec.Env = nil
	for i := range 64 {
		worst.Spec.Env = append(worst.Spec.Env, ctfv1alpha1.EnvVar{Name: fmt.Sprintf("V%d", i), Value: strings.Repeat("é'\"{}:#&*!|>", 4096/13)})
	}
	annotations := ctfv1alpha1.Metadata{}
	for i := range 32 {
		annotations[fmt.Sprintf("%s.%s.%s.ex/%s", strings.Repeat("a", 60), strings.Repeat("b", 60), strings.Repeat("c", 60), strings.Repeat(fmt.Sprint(i%10), 62)+fmt.Sprint(i/10))] = ctfv1alpha1.MetadataValue(strings.Repeat("ß", 1024))
	}
	worst.Spec.Values = &ctfv1alpha1.Values{PodAnnotations: annotations, TmpSizeLimit: q("1e9"),
		Resources: &ctfv1alpha1.Resources{Limits: &ctfv1alpha1.ResourceAmounts{CPU: q("999999999999E"), Memory: q("0.000000001")}}}
	g.Expect(createStrict(ctx, worst, func(spec map[string]any) {
		spec["lifetime"] = "720h"
		spec["renewedAt"] = "2026-11-23T10:00:00.123456789+14:00"
	})).To(Succeed())
	got := eventuallyPhase(t, worst, ctfv1alpha1.PhaseError)
	g.Expect(got.Status.Reason).To(Equal("PolicyViolation"), "a CPU limit of 999999999999E is over any ceiling")

	g.Expect(h.Restart()).To(Succeed())
	fresh := builders.Challenge(ns, "fresh", "fresh-team")
	g.Expect(k8s.Create(ctx, fresh)).To(Succeed())
	eventuallyPhase(t, fresh, ctfv1alpha1.PhaseRunning)
	eventuallyPhase(t, worst, ctfv1alpha1.PhaseError)
}

// TestDeletionWaitsForTheOperator: a Challenge deleted while the operator is
// down keeps its finalizer, so nothing is orphaned, and its teardown finishes
// once the operator is back.
func TestDeletionWaitsForTheOperator(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t)
	ch := builders.Challenge(ns, "while-down", "team-down")
	g.Expect(k8s.Create(ctx, ch)).To(Succeed())
	eventuallyPhase(t, ch, ctfv1alpha1.PhaseRunning)

	h.Stop()
	started := false
	t.Cleanup(func() {
		if !started {
			_ = h.Start()
		}
	})
	g.Expect(k8s.Delete(ctx, ch)).To(Succeed())
	key := client.ObjectKeyFromObject(ch)
	got := &ctfv1alpha1.Challenge{}
	g.Expect(k8s.Get(ctx, key, got)).To(Succeed(), "the finalizer holds it while nobody can uninstall")
	g.Expect(got.DeletionTimestamp).NotTo(BeNil())
	g.Expect(k8s.Get(ctx, key, &appsv1.Deployment{})).To(Succeed())

	g.Expect(h.Start()).To(Succeed())
	started = true
	g.Eventually(func(g Gomega) {
		g.Expect(apierrors.IsNotFound(k8s.Get(ctx, key, &ctfv1alpha1.Challenge{}))).To(BeTrue())
		g.Expect(apierrors.IsNotFound(k8s.Get(ctx, key, &appsv1.Deployment{}))).To(BeTrue())
		g.Expect(releaseSecrets(ctx, g, ns, ch.Name)).To(BeEmpty())
	}, timeout, interval).Should(Succeed(), "finished once the operator is back")
}
