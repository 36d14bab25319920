package operator_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
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
	worst := newChallenge(ns, "worst", "worst-team")
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
	fresh := newChallenge(ns, "fresh", "fresh-team")
	g.Expect(k8s.Create(ctx, fresh)).To(Succeed())
	eventuallyPhase(t, fresh, ctfv1alpha1.PhaseRunning)
	eventuallyPhase(t, worst, ctfv1alpha1.PhaseError)
}
