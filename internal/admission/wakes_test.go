package admission

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/test/builders"
)

// TestAFailureWakesTheChallengesStillBeingJudged: a failure or a leaving
// instance wakes the Challenges its place may be waiting for, those not
// judged yet among them: one judged Queued behind a failure whose status
// did not say Error yet, whose own Queued status was written after that
// failure's, was never woken (with --max-instances 2, two failures created
// ahead of two valid Challenges left one Queued, 40 s on, with a place free).
// Not one admitted, nor one no bound applies to: every instance leaving
// woke every instance starting, cluster wide, into a second reconcile of
// its release (TestAnInstallSendsWhatHelmNeeds counted its reads under load).
func TestAFailureWakesTheChallengesStillBeingJudged(t *testing.T) {
	now := metav1.Now()
	bounded := &Queue{MaxInstances: 2}
	unbounded := &Queue{}
	templates := oneTemplate{builders.BareTemplate("capped", maxInstances(3))}
	tests := []struct {
		name     string
		st       ctfv1alpha1.ChallengeStatus
		template string
		gone     bool
		queue    *Queue
		want     bool
	}{
		{"Queued", ctfv1alpha1.ChallengeStatus{Phase: ctfv1alpha1.PhaseQueued}, "", false, bounded, true},
		{"not judged yet", ctfv1alpha1.ChallengeStatus{}, "", false, bounded, true},
		{"Pending, not admitted", ctfv1alpha1.ChallengeStatus{Phase: ctfv1alpha1.PhasePending}, "", false, bounded, true},
		{"admitted, not installed", ctfv1alpha1.ChallengeStatus{Phase: ctfv1alpha1.PhasePending, AdmittedAt: &now}, "", false, bounded, false},
		{"refused", ctfv1alpha1.ChallengeStatus{Phase: ctfv1alpha1.PhaseError}, "", false, bounded, false},
		{"installed", ctfv1alpha1.ChallengeStatus{Phase: ctfv1alpha1.PhaseRunning, StartedAt: &now}, "", false, bounded, false},
		{"leaving", ctfv1alpha1.ChallengeStatus{}, "", true, bounded, false},
		{"not judged, no bound", ctfv1alpha1.ChallengeStatus{}, "", false, unbounded, false},
		{"not judged, its template's bound", ctfv1alpha1.ChallengeStatus{}, "capped", false, unbounded, true},
		{"Queued, no bound (held by its template)", ctfv1alpha1.ChallengeStatus{Phase: ctfv1alpha1.PhaseQueued}, "", false, unbounded, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ch := &ctfv1alpha1.Challenge{Spec: ctfv1alpha1.ChallengeSpec{Template: tt.template}, Status: tt.st}
			if tt.gone {
				ch.DeletionTimestamp = &now
			}
			NewWithT(t).Expect(tt.queue.Waiting(context.Background(), templates)(ch)).To(Equal(tt.want))
		})
	}
}

// oneTemplate is a cache holding one template.
type oneTemplate struct {
	tmpl *ctfv1alpha1.ChallengeTemplate
}

func (r oneTemplate) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	if key.Name != r.tmpl.Name {
		return apierrors.NewNotFound(ctfv1alpha1.GroupVersion.WithResource("challengetemplates").GroupResource(), key.Name)
	}
	r.tmpl.DeepCopyInto(obj.(*ctfv1alpha1.ChallengeTemplate))
	return nil
}

func (oneTemplate) List(context.Context, client.ObjectList, ...client.ListOption) error { return nil }
