package controller

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
)

// Only what reaches the release counts: a renewal or a lowered lifetime
// renders the same, anything else does not.
func TestRenderedSpecIgnoresRenewalAndLifetime(t *testing.T) {
	g := NewWithT(t)
	base := &ctfv1alpha1.Challenge{Spec: ctfv1alpha1.ChallengeSpec{
		Participant: "team-1", Image: "registry.example/web:1",
		Ports:    []ctfv1alpha1.ChallengePort{{Name: "http", Port: 8080}},
		Lifetime: &metav1.Duration{Duration: time.Hour},
	}}
	renewed := base.DeepCopy()
	renewed.Spec.RenewedAt = &metav1.Time{Time: time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)}
	renewed.Spec.Lifetime = &metav1.Duration{Duration: 30 * time.Minute}
	g.Expect(renderedSpec(renewed)).To(Equal(renderedSpec(base)))
	g.Expect(renderedSpec(base)).NotTo(Equal(specDigest{}))

	changed := renewed.DeepCopy()
	changed.Spec.Image = "registry.example/web:2"
	g.Expect(renderedSpec(changed)).NotTo(Equal(renderedSpec(base)))
	changed = renewed.DeepCopy()
	changed.Spec.Env = []ctfv1alpha1.EnvVar{{Name: "MODE", Value: "hard"}}
	g.Expect(renderedSpec(changed)).NotTo(Equal(renderedSpec(base)))
}
