package challenge

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/lifecycle"
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

// A Challenge deleted and created again under the same name (a team
// restarting its instance) does not inherit what was recorded of the one
// before, whose delete event may come after the new one is in the cache:
// the new one's first generation is recorded as its own, and a later
// generation that renders as the old one's spec, but not as its own, is an
// upgrade, shown as such.
func TestRecordOfAChallengeCreatedAgainIsItsOwn(t *testing.T) {
	g := NewWithT(t)
	w := &StatusWriter{}
	challenge := func(uid types.UID, generation int64, image string) *ctfv1alpha1.Challenge {
		return &ctfv1alpha1.Challenge{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ctf", Name: "web-team-1", UID: uid, Generation: generation},
			Spec: ctfv1alpha1.ChallengeSpec{Participant: "team-1", Image: image,
				Ports: []ctfv1alpha1.ChallengePort{{Name: "http", Port: 8080}}},
			Status: ctfv1alpha1.ChallengeStatus{ObservedGeneration: 1, Conditions: []metav1.Condition{
				{Type: lifecycle.ConditionDeployed, Status: metav1.ConditionTrue}}},
		}
	}
	w.recordHandled(challenge("first", 1, "registry.example/web:1"), 1)
	w.recordHandled(challenge("again", 1, "registry.example/web:2"), 1)

	renewed := challenge("again", 2, "registry.example/web:2")
	renewed.Spec.RenewedAt = &metav1.Time{Time: time.Date(2026, 11, 26, 6, 0, 0, 0, time.UTC)}
	g.Expect(w.operationFor(renewed)).To(Equal(lifecycle.NoOperation), "its renewal renders as its own first generation")
	changed := challenge("again", 2, "registry.example/web:1")
	g.Expect(w.operationFor(changed)).To(Equal(lifecycle.Upgrading), "its new image is an upgrade, though the Challenge before had it")
}
