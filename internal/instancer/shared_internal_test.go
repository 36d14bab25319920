package instancer

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
)

// TestTeamsAreNeverShownACanary: a shared template's solver canary runs in
// the operator's namespace, which is the instancer's in the default
// install; once it no longer waits for the organiser's instance, both run,
// and the older of the two, the canary, was shown to every team as the
// shared instance. The operator's own instances are never the one shown.
func TestTeamsAreNeverShownACanary(t *testing.T) {
	at := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	instance := func(name string, minute int, phase ctfv1alpha1.Phase, labels map[string]string) ctfv1alpha1.Challenge {
		return ctfv1alpha1.Challenge{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, CreationTimestamp: metav1.NewTime(at.Add(time.Duration(minute) * time.Minute))},
			Spec: ctfv1alpha1.ChallengeSpec{Template: "bot"}, Status: ctfv1alpha1.ChallengeStatus{Phase: phase}}
	}
	tests := []struct {
		name  string
		items []ctfv1alpha1.Challenge
		want  string // "" for none
	}{
		{"the organiser's, beside an older Running solver canary", []ctfv1alpha1.Challenge{
			instance("bot-solver", 0, ctfv1alpha1.PhaseRunning, map[string]string{ctfv1alpha1.SolverCanaryLabel: "bot"}),
			instance("bot-organiser", 1, ctfv1alpha1.PhaseRunning, nil)}, "bot-organiser"},
		{"the organiser's, beside a containment canary", []ctfv1alpha1.Challenge{
			instance("bot-canary", 0, ctfv1alpha1.PhaseRunning, map[string]string{ctfv1alpha1.CanaryLabel: "bot"}),
			instance("bot-organiser", 1, ctfv1alpha1.PhasePending, nil)}, "bot-organiser"},
		{"none but a canary: not started", []ctfv1alpha1.Challenge{
			instance("bot-solver", 0, ctfv1alpha1.PhaseRunning, map[string]string{ctfv1alpha1.SolverCanaryLabel: "bot"})}, ""},
		{"the Running one before an older Pending one", []ctfv1alpha1.Challenge{
			instance("bot-old", 0, ctfv1alpha1.PhasePending, nil),
			instance("bot-new", 1, ctfv1alpha1.PhaseRunning, nil)}, "bot-new"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got := pickShared(tt.items, "bot")
			if tt.want == "" {
				g.Expect(got).To(BeNil())
				return
			}
			g.Expect(got).NotTo(BeNil())
			g.Expect(got.Name).To(Equal(tt.want))
		})
	}
}
